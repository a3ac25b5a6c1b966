// The completion model from a CLI11 tree, the scripts rendered from it, and the dynamic values.
#include <catch2/catch.hpp>

#include "lib/completion/model.hpp"
#include "lib/config/cli_flags.hpp"
#include "lib/config/registry.hpp"

using namespace mtrain::completion;
using Catch::Matchers::Contains;

namespace {
const CommandSpec& find(const std::vector<CommandSpec>& cs, const std::string& path) {
  for (const auto& c : cs)
    if (c.path == path) return c;
  FAIL("no command " << path);
  throw;
}
const OptionSpec* opt(const CommandSpec& c, const std::string& name) {
  for (const auto& o : c.options)
    for (const auto& n : o.names)
      if (n == name) return &o;
  return nullptr;
}
}  // namespace

TEST_CASE("describe walks subcommands, options, value choices and hides helpers", "[completion]") {
  CLI::App root{"test", "mtrain"};
  std::string s, fmt, strat, cfg;
  bool flag = false;
  auto* launch = root.add_subcommand("launch", "Launch");
  launch->prefix_command();
  launch->add_option("--format", fmt, "Format")->check(CLI::IsMember({"text", "json"}));
  launch->add_option("--strategy", strat, "Strategy");
  launch->add_option("--config", cfg, "Config");
  launch->add_flag("--dry-run,-n", flag, "Dry");
  auto* bench = root.add_subcommand("bench", "Bench");
  bench->add_subcommand("comm", "Comm");
  root.add_subcommand("__complete", "hidden")->group("");
  auto cs = describe(root, default_hints());
  const auto& top = find(cs, "mtrain");
  CHECK(top.subcommands == std::vector<std::string>{"launch", "bench"});
  const auto& l = find(cs, "mtrain launch");
  CHECK(l.takes_program);
  REQUIRE(opt(l, "--format"));
  CHECK(opt(l, "--format")->choices == std::vector<std::string>{"text", "json"});
  CHECK(opt(l, "--strategy")->dynamic == "strategies");
  CHECK(opt(l, "--config")->dynamic == "yaml");
  REQUIRE(opt(l, "-n"));
  CHECK_FALSE(opt(l, "--dry-run")->takes_value);
  CHECK(find(cs, "mtrain bench").subcommands == std::vector<std::string>{"comm"});
  find(cs, "mtrain bench comm");

  const std::string bash = bash_script(cs);
  CHECK_THAT(bash, Contains("mtrain) _mtrain_r=(launch bench) ;;"));
  CHECK_THAT(bash, Contains("'mtrain launch|--format') _mtrain_kind=list; _mtrain_r=(text json) ;;"));
  CHECK_THAT(bash, Contains("'mtrain launch|--strategy') _mtrain_kind=strategies ;;"));
  CHECK_THAT(bash, Contains("complete -F _mtrain mtrain"));
  CHECK(bash.find("__complete)") == std::string::npos);
  CHECK_THAT(zsh_script(cs), Contains("#compdef mtrain"));
  CHECK_THAT(fish_script(cs), Contains("case 'mtrain launch|--format'\n            printf '%s\\n' 'list' 'text' 'json'"));
}

TEST_CASE("registry choice flags complete their values", "[completion]") {
  // Flags generated from the registry (config::add_setting_flags) carry their choices in the
  // type name, as CLI11's IsMember does; every choice setting completes from its one definition.
  namespace cfg = mtrain::config;
  CLI::App root{"test", "mtrain"};
  auto* launch = root.add_subcommand("launch", "Launch");
  std::map<std::string, std::string> out;
  cfg::add_setting_flags(*launch, cfg::job_registry(), out, {cfg::Scope::Launch, cfg::Scope::Job});
  cfg::add_setting_flags(*launch, cfg::job_registry(), out, {cfg::Scope::Launch}, {}, cfg::FlagKind::PerInvocation);
  const auto cs = describe(root, default_hints());
  const auto& l = find(cs, "mtrain launch");
  int checked = 0;
  for (const auto& s : cfg::job_registry().all()) {
    if (s.type != cfg::Type::Choice || cfg::cli_flag(s).empty() || s.list) continue;
    if (s.scope != cfg::Scope::Launch && s.scope != cfg::Scope::Job) continue;
    INFO(s.key);
    const OptionSpec* o = opt(l, cfg::dashed(cfg::cli_flag(s)));
    REQUIRE(o);
    CHECK(o->choices == s.choices);
    ++checked;
  }
  CHECK(checked >= 5);
  REQUIRE(opt(l, "--format"));
  CHECK(opt(l, "--format")->choices == std::vector<std::string>{"text", "json"});
  CHECK_THAT(bash_script(cs), Contains("'mtrain launch|--format') _mtrain_kind=list; _mtrain_r=(text json) ;;"));
}

TEST_CASE("dynamic values: registry, Slurm partitions, hostfile hosts", "[completion]") {
  auto none = [](const std::vector<std::string>&) { return std::string(); };
  auto strategies = dynamic_values("strategies", {}, none);
  CHECK(strategies == std::vector<std::string>{"ddp", "zero1", "zero2", "zero3", "fsdp", "auto"});
  CHECK_FALSE(dynamic_values("models", {}, none).empty());
  auto sinfo = [](const std::vector<std::string>& argv) {
    return argv == std::vector<std::string>{"sinfo", "-h", "-o", "%P"} ? std::string("gpu*\ncpu\ngpu*\n") : std::string();
  };
  CHECK(dynamic_values("partitions", {}, sinfo) == std::vector<std::string>{"gpu", "cpu"});
  CHECK(dynamic_values("partitions", {}, none).empty());
  CHECK(dynamic_values("hosts", {"launch", "--include"}, none).empty());
  CHECK(dynamic_values("hosts", {"--hostfile", "/nonexistent/hosts"}, none).empty());
  CHECK(dynamic_values("no-such-kind", {}, none).empty());
}

TEST_CASE("man pages: one per command, from the same tree, in plain man(7) roff", "[completion][man]") {
  CLI::App root{"launch and train", "mtrain"};
  std::string fmt_, dir;
  bool flag = false;
  auto* launch = root.add_subcommand("launch", "Start one process per rank");
  launch->prefix_command();
  launch->footer("Without PROGRAM the bundled trainer runs.");
  launch->add_option("--format", fmt_, "Output format")->check(CLI::IsMember({"text", "json"}));
  launch->add_flag("--dry-run,-n", flag, "Print the plan — nothing starts");
  auto* runs = root.add_subcommand("runs", "List runs");
  runs->add_option("dir", dir, "A work dir");
  runs->add_subcommand("plot", "Draw curves");
  root.add_subcommand("__man", "hidden")->group("");
  const auto pages = man_pages(describe(root, default_hints()), "9.9.9");
  std::vector<std::string> files;
  for (const auto& p : pages) files.push_back(p.file);
  CHECK(files == std::vector<std::string>{"mtrain.1", "mtrain-launch.1", "mtrain-runs.1", "mtrain-runs-plot.1"});
  const std::string& l = pages[1].text;
  CHECK_THAT(l, Contains(".TH MTRAIN\\-LAUNCH 1 \"\" \"mtrain 9.9.9\""));
  CHECK_THAT(l, Contains(".SH NAME\nmtrain\\-launch \\- Start one process per rank"));
  CHECK_THAT(l, Contains("\\fB\\-\\-dry\\-run\\fR, \\fB\\-n\\fR\nPrint the plan \\[u2014] nothing starts"));
  CHECK_THAT(l, Contains("\\fB\\-\\-format\\fR \\fITEXT\\fR"));
  CHECK_THAT(l, Contains("One of: text, json."));
  CHECK_THAT(l, Contains("Without PROGRAM the bundled trainer runs."));
  CHECK_THAT(l, Contains("[\\fIPROGRAM\\fR"));
  CHECK_THAT(l, Contains("\\fBmtrain\\fR(1)"));
  CHECK_THAT(pages[0].text, Contains(".B launch\n") && Contains("\\fBmtrain\\-runs\\fR(1)"));
  CHECK_THAT(pages[2].text, Contains("[\\fIdir\\fR]") && Contains(".SH ARGUMENTS"));
  // No line may start with a control character the text did not mean.
  for (const auto& p : pages)
    for (size_t i = 0; (i = p.text.find("\n'", i)) != std::string::npos; ++i) FAIL(p.file << " has a line starting with '");
}

TEST_CASE("set: completes setting keys and their values", "[completion]") {
  auto v = dynamic_values("settings", {}, [](const std::vector<std::string>&) { return std::string(); });
  auto has = [&](const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); };
  CHECK(has("model.name="));
  CHECK(has("model.name=resnet18"));
  CHECK(has("train.max_steps="));
  CHECK(has("data.shuffle=false"));
}

TEST_CASE("help: a footer's Examples block is split off, shown after the usage line and in the man page", "[completion][help]") {
  const FooterParts none = split_footer("Just text.");
  CHECK(none.text == "Just text.");
  CHECK(none.examples.empty());
  const FooterParts p = split_footer("Some text.\n\n" + examples_block({{"mtrain runs wd", "one row per run"}, {"mtrain runs", ""}}));
  CHECK(p.text == "Some text.");
  REQUIRE(p.examples.size() == 2);
  CHECK(p.examples[0].command == "mtrain runs wd");
  CHECK(p.examples[0].why == "one row per run");
  CHECK(p.examples[1].why.empty());

  // Issue 45: launch's usage line omitted PROGRAM and no example came before ~165 lines of flags.
  CLI::App root{"launch and train", "mtrain"};
  root.formatter(std::make_shared<HelpFormatter>());
  std::string s;
  auto* launch = root.add_subcommand("launch", "Start one process per rank");
  launch->prefix_command();
  launch->footer("Without PROGRAM the bundled trainer runs.\n\n" +
                 examples_block({{"mtrain launch --nproc-per-node 2 train.py", "two ranks of your script"}}));
  for (int i = 0; i < 30; ++i) launch->add_option("--flag" + std::to_string(i), s, "A flag");
  const std::string help = launch->help();
  const size_t usage = help.find("Usage: ");
  REQUIRE(usage != std::string::npos);
  CHECK_THAT(help.substr(usage, help.find('\n', usage) - usage), Contains("[--] [PROGRAM [ARGS...]]"));
  const size_t example = help.find("  mtrain launch --nproc-per-node 2 train.py\n      two ranks of your script\n");
  REQUIRE(example != std::string::npos);
  CHECK(example < help.find("--flag0"));
  CHECK_THAT(help, Contains("Without PROGRAM the bundled trainer runs.\n"));
  CHECK(help.find("Examples:") == help.rfind("Examples:"));  // not repeated in the footer

  const auto pages = man_pages(describe(root, default_hints()), "9.9.9");
  REQUIRE(pages.size() == 2);
  const std::string& l = pages[1].text;
  CHECK_THAT(l, Contains(".SH EXAMPLES\n.PP\ntwo ranks of your script:\n.RS 4\n.nf\nmtrain launch \\-\\-nproc\\-per\\-node 2 train.py\n.fi\n"));
  CHECK_THAT(l, Contains(".SH EXIT STATUS\n"));
  CHECK_THAT(l, Contains("exit code of the first rank to fail"));
  CHECK_THAT(l, !Contains("Examples:"));
  // A page without examples of its own still has both sections.
  CHECK_THAT(pages[0].text, Contains(".SH EXAMPLES\n") && Contains("mtrain \\-\\-help") && Contains(".SH EXIT STATUS\n"));
}

TEST_CASE("man pages: a footer's aligned column list becomes .TP items, not justified text", "[completion][man]") {
  CLI::App root{"t", "mtrain"};
  auto* launch = root.add_subcommand("launch", "Launch");
  launch->footer("Compatibility:\n  --nproc_per_node V          [torchrun] = --nproc-per-node\n  --standalone  one node\nAfter.");
  const auto pages = man_pages(describe(root, default_hints()), "1");
  REQUIRE(pages.size() == 2);
  CHECK_THAT(pages[1].text, Contains(".PP\nCompatibility:\n.TP\n\\-\\-nproc_per_node V\n[torchrun] = \\-\\-nproc\\-per\\-node\n"
                                     ".TP\n\\-\\-standalone\none node\n.PP\nAfter.\n"));
}
