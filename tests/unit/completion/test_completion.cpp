// The completion model from a CLI11 tree, the scripts rendered from it, and the dynamic values.
#include <catch2/catch.hpp>

#include "mtrain/completion/model.hpp"

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

TEST_CASE("dynamic values: registry, Slurm partitions, hostfile hosts", "[completion]") {
  auto none = [](const std::vector<std::string>&) { return std::string(); };
  auto strategies = dynamic_values("strategies", {}, none);
  CHECK(strategies == std::vector<std::string>{"ddp", "zero1", "zero2", "zero3", "fsdp"});
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
