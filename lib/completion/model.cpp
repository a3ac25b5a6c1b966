#include "lib/completion/model.hpp"

#include <algorithm>

#include "lib/config/compat_flags.hpp"
#include "lib/core/strings.hpp"
#include "lib/slurm/job_options.hpp"

namespace mtrain::completion {

namespace {

// "TEXT:{text,json}" → {text, json}
std::vector<std::string> choices_of(const CLI::Option* o) {
  const std::string t = o->get_type_name();
  auto open = t.find('{'), close = t.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return {};
  std::vector<std::string> out;
  for (auto& c : str::split(t.substr(open + 1, close - open - 1), ',')) {
    c = str::trim(c);
    if (!c.empty()) out.push_back(c);
  }
  return out;
}

bool hidden(const CLI::App* a) { return a->get_group().empty() || str::starts_with(a->get_name(), "__"); }

void walk(const CLI::App* app, const std::string& path, const Hints& h, std::vector<CommandSpec>& out) {
  CommandSpec c;
  c.path = path;
  c.takes_program = app->get_prefix_command();
  c.description = app->get_description();
  FooterParts footer = split_footer(app->get_footer());
  c.footer = footer.text;
  c.examples = footer.examples;
  for (const CLI::Option* o : app->get_options()) {
    OptionSpec s;
    for (const auto& l : o->get_lnames()) s.names.push_back("--" + l);
    for (const auto& n : o->get_snames()) s.names.push_back("-" + n);
    if (s.names.empty()) {
      if (o->get_positional())
        c.positionals.push_back({o->get_name(), o->get_description(), o->get_required(), o->get_expected_max() > 1});
      continue;
    }
    s.takes_value = o->get_expected_max() != 0 && o->get_type_size_max() != 0;  // flags expect 0 values
    s.help = o->get_description();
    if (s.takes_value) s.value_name = o->get_type_name();
    if (s.takes_value) {
      s.choices = choices_of(o);
      for (const auto& n : s.names) {
        if (auto it = h.dynamic_by_option.find(n); it != h.dynamic_by_option.end()) s.dynamic = it->second;
        if (auto it = h.choices_by_option.find(n); it != h.choices_by_option.end() && s.choices.empty()) s.choices = it->second;
      }
      if (!s.choices.empty() && (s.dynamic == "strategies" || s.dynamic == "models")) s.dynamic.clear();
    }
    c.options.push_back(s);
  }
  if (auto it = h.extra_options.find(path); it != h.extra_options.end())
    for (const auto& s : it->second)
      if (std::none_of(c.options.begin(), c.options.end(), [&](const OptionSpec& x) {
            return std::any_of(s.names.begin(), s.names.end(), [&](const std::string& n) {
              return std::find(x.names.begin(), x.names.end(), n) != x.names.end();
            });
          }))
        c.options.push_back(s);
  std::vector<const CLI::App*> subs;
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; }))
    if (!hidden(sub)) subs.push_back(sub);
  for (const CLI::App* sub : subs) {
    c.subcommands.push_back(sub->get_name());
    c.sub_help.push_back(sub->get_description());
  }
  out.push_back(c);
  for (const CLI::App* sub : subs) walk(sub, path + " " + sub->get_name(), h, out);
}

}  // namespace

Hints default_hints() {
  Hints h;
  h.dynamic_by_option = {{"--strategy", "strategies"}, {"--strategies", "strategies"}, {"--model", "models"},
                         {"--config", "yaml"},         {"--hostfile", "files"},         {"--include", "hosts"},
                         {"--exclude", "hosts"},       {"--master-addr", "hosts"},      {"--partition", "partitions"},
                         {"-p", "partitions"},         {"--output", "files"},           {"--plot", "files"},
                         {"--log-dir", "files"},       {"--work-dir", "files"},         {"--script-file", "files"},
                         {"--job", "files"},           {"-o", "files"},                 {"--init", "files"},
                         {"--set", "settings"}};
  // `mtrain slurm script|submit` build their options when they run (from the Slurm job
  // settings); list them here so they complete too.
  std::vector<OptionSpec> slurm_opts;
  for (const auto& s : slurm::job_settings()) {
    OptionSpec o;
    o.names = {"--" + s.key};
    o.takes_value = !s.flag;
    o.help = s.help;
    if (s.key == "partition") o.dynamic = "partitions";
    slurm_opts.push_back(o);
  }
  slurm_opts.push_back({{"--config"}, true, {}, "yaml", "Job file (YAML)", "FILE"});
  h.extra_options["mtrain slurm script"] = slurm_opts;
  slurm_opts.push_back({{"--script-file"}, true, {}, "files", "Where to write the script", "FILE"});
  slurm_opts.push_back({{"--format"}, true, {"text", "json"}, "", "Output format", "TEXT:{text,json}"});
  h.extra_options["mtrain slurm submit"] = slurm_opts;
  // torchrun / deepspeed / accelerate spellings `mtrain launch` takes (compat_flags.hpp); the
  // refused ones are not offered. A spelling that is also launch's own is listed once.
  std::vector<OptionSpec> compat;
  for (const auto& c : config::compat_flags())
    if (c.action != config::CompatAction::Refuse)
      for (const auto& name : c.spellings) compat.push_back({{name}, c.takes_value, {}, "", c.meaning, ""});
  h.extra_options["mtrain launch"] = compat;
  return h;
}

std::vector<CommandSpec> describe(const CLI::App& root, const Hints& hints) {
  std::vector<CommandSpec> out;
  walk(&root, root.get_name().empty() ? "mtrain" : root.get_name(), hints, out);
  return out;
}

}  // namespace mtrain::completion
