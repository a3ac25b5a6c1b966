#include "lib/config/wizard.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <istream>
#include <ostream>
#include <set>

#include <fmt/format.h>

#include "lib/config/config_commands.hpp"
#include "lib/config/job_choice.hpp"
#include "lib/config/launch_choices.hpp"
#include "lib/config/names.hpp"
#include "lib/config/train_choices.hpp"
#include "lib/config/cross_checks.hpp"
#include "lib/config/data_checks.hpp"
#include "lib/config/render.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/config/validate.hpp"
#include "lib/config/yaml_layer.hpp"
#include "lib/core/error.hpp"
#include "lib/core/node_count.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::config {

namespace {

using When = std::function<bool(const json& job)>;

struct Question {
  std::string key;
  std::string intro;  // shown before the registry help: why this question is asked now
  When when;
};

std::string text_of(const json& job, const std::string& key) { return get(job, key).get<std::string>(); }

const std::vector<Question>& script() {
  static const std::vector<Question> q = [] {
    auto always = [](const json&) { return true; };
    auto launcher_is = [](LauncherKind l) { return [l](const json& j) { return choice_at<LauncherKind>(j, "launch.launcher") == l; }; };
    auto strategy_is = [](StrategyName s) { return [s](const json& j) { return parse_choice<StrategyName>(text_of(j, "strategy")) == s; }; };
    auto model_is = [](ModelName m) { return [m](const json& j) { return model_from_text(text_of(j, "model.name")) == m; }; };
    auto zero = [](const json& j) {
      const auto s = parse_choice<StrategyName>(text_of(j, "strategy"));
      return s && is_zero(*s);
    };
    auto torchscript = model_is(ModelName::Torchscript);
    auto elastic = [](const json& j) {
      const NodeCountReading n = read_nnodes(text_of(j, "launch.nnodes"));
      return n.problem.empty() && n.count.elastic();
    };
    auto user_data = [](const json& j) {
      const DataName d = choice_at<DataName>(j, "data.name");
      return d == DataName::Tokens || d == DataName::Tensors;
    };
    return std::vector<Question>{
        {"launch.launcher", "Where will the job run?", always},
        {"launch.nproc_per_node", "How many ranks on each node?", always},
        {"launch.hostfile", "Several machines over ssh: which hosts?", launcher_is(LauncherKind::Ssh)},
        {"launch.nnodes", "How many of those hosts take part?", launcher_is(LauncherKind::Ssh)},
        {"slurm.nodes", "Slurm: how many nodes to allocate?", launcher_is(LauncherKind::Slurm)},
        {"slurm.gpus_per_node", "Slurm: GPUs per node?", launcher_is(LauncherKind::Slurm)},
        {"slurm.partition", "Slurm: which partition?", launcher_is(LauncherKind::Slurm)},
        {"slurm.time", "Slurm: time limit?", launcher_is(LauncherKind::Slurm)},
        {"slurm.account", "Slurm: account to charge?", launcher_is(LauncherKind::Slurm)},
        {"launch.nnodes",
         "Slurm: elastic? MIN:MAX (e.g. 2:4 of 4 nodes) goes on without a lost node; "
         "Enter: every node, fixed.",
         launcher_is(LauncherKind::Slurm)},
        {"launch.rdzv_backend",
         "Elastic: where do the nodes meet? mtrain: a store on the first node (losing "
         "that node ends the job); etcd: an etcd cluster you run (any node may be lost).",
         elastic},
        {"launch.rdzv_endpoint",
         "etcd: the cluster's members, every node reaches them (host1:2379,host2:2379,host3:2379).",
         [](const json& j) { return choice_at<RdzvBackend>(j, "launch.rdzv_backend") == RdzvBackend::Etcd; }},
        {"model.name", "Which model does mtrain-worker train?", always},
        {"model.n_layer", "GPT size: blocks.", model_is(ModelName::Gpt)},
        {"model.n_head", "GPT size: attention heads.", model_is(ModelName::Gpt)},
        {"model.n_embd", "GPT size: width (a multiple of the head count).", model_is(ModelName::Gpt)},
        {"model.hidden", "MLP size: hidden width.", model_is(ModelName::Mlp)},
        {"model.depth", "MLP size: layers.", model_is(ModelName::Mlp)},
        {"model.path", "Your own model: which TorchScript file (torch.jit.save(torch.jit.script(model), PATH))?",
         torchscript},
        {"model.loss", "Your model's loss: its own loss(input, target) method (auto), or which?", torchscript},
        {"data.name", "Which data does it train on?", torchscript},
        {"data.path", "Your data: which file?", user_data},
        {"data.val_path", "A separate validation file? (empty: the tail of the training file)", user_data},
        {"train.precision", "Numeric precision?", always},
        {"train.batch_size", "Samples per rank per micro-batch?", always},
        {"strategy", "How should model state be spread over the ranks?", always},
        {"zero.offload_optimizer_device", "ZeRO: keep optimiser state off the GPU?", zero},
        {"zero.offload_param_device", "ZeRO-3: keep parameter shards off the GPU?", strategy_is(StrategyName::Zero3)},
        {"fsdp.sharding_strategy", "FSDP: what to shard?", strategy_is(StrategyName::Fsdp)},
        {"fsdp.cpu_offload", "FSDP: keep parameter shards in CPU memory?", strategy_is(StrategyName::Fsdp)},
        // Without named blocks FSDP over the user's model is one unit: every parameter gathered
        // at once, no memory saved over ddp (issue 45). The classes found are listed before it.
        {"fsdp.wrap_module_types",
         "FSDP: which blocks of your model are its units (class names, comma-separated)? "
         "Empty: the whole model is one unit and FSDP saves no memory.",
         [=](const json& j) { return strategy_is(StrategyName::Fsdp)(j) && torchscript(j); }},
        {"precision.loss_scale", "fp16 needs loss scaling so small gradients survive: fixed or dynamic?",
         [](const json& j) { return choice_at<Precision>(j, "train.precision") == Precision::Fp16; }},
        {"precision.initial_scale_power", "fp16 dynamic scaling: starting power of two.",
         [](const json& j) {
           return choice_at<Precision>(j, "train.precision") == Precision::Fp16 &&
                  get(j, "precision.loss_scale").get<double>() == 0;
         }},
        {"train.grad_accum", "Micro-batches per optimiser step?", always},
        {"train.max_steps", "How long to train (optimiser steps)?", always},
        {"checkpoint.interval",
         "How often to save a checkpoint (optimiser steps)? Ctrl-C saves one too, and "
         "`mtrain launch ... --resume auto` continues from the newest.",
         always},
        {"optim.name", "Optimiser?", always},
        {"optim.lr", "Peak learning rate?", always},
        {"train.work_dir", "Where should metrics, checkpoints and model.pt go?", always},
        {"log.tensorboard",
         "Watch the run in TensorBoard? A folder for its event files (empty: no; for MLflow "
         "set log.mlflow.uri, docs/tracking.md).",
         always},
    };
  }();
  return q;
}

// An answer for one question: empty → the current value; a number picks a listed choice; y/n
// for switches; anything else goes through the registry's parser (which explains refusals).
json interpret(const Registry& reg, const Setting& s, const std::string& raw, const json& current) {
  const std::string a = str::trim(raw);
  if (a.empty()) return current;
  if (s.type == Type::Choice) {
    if (auto n = str::parse_uint(a); n && *n >= 1 && *n <= static_cast<long long>(s.choices.size()))
      return s.choices[*n - 1];
    if (auto n = str::parse_uint(a))
      throw Error(fmt::format("{} is not one of the numbers 1-{}", *n, s.choices.size()),
                  "Type a number from the list or the name itself.");
  }
  if (s.type == Type::Bool && (a == "y" || a == "Y")) return true;
  if (s.type == Type::Bool && (a == "n" || a == "N")) return false;
  return reg.parse_text(s, a);
}

std::string shown(const json& v) {
  if (v.is_array()) {
    std::vector<std::string> items;
    for (const auto& i : v) items.push_back(i.is_string() ? i.get<std::string>() : i.dump());
    return items.empty() ? "(empty)" : str::join(items, ", ");
  }
  return v.is_string() ? (v.get<std::string>().empty() ? "(empty)" : v.get<std::string>()) : v.dump();
}

// The answers so far, and the job they resolve to (every other setting at its default).
struct Answers {
  std::map<std::string, json> values;
  std::set<std::string> preset;  // given with --set: shown, not asked

  Resolved job(const Registry& reg) const { return resolve(reg, {Layer{Source::Cli, "wizard", values}}); }
};

// Before the strategy question: model, world and precision are known, so show what each strategy
// needs and take the recommended one as the default answer.
void advise_strategy(const Registry& reg, const WizardOptions& opt, Answers& answers, Resolved& r,
                     std::ostream& out) {
  try {
    const auto advice = opt.advise(r);
    out << "\n" << advice.table;
    if (!advice.recommended.empty()) {
      answers.values["strategy"] = advice.recommended;
      r = answers.job(reg);
    }
  } catch (const Error& e) {
    out << "\n(no memory estimate: " << e.message() << ")\n";
  }
}

void print_question(const Question& q, const Setting& s, int number, std::ostream& out) {
  out << fmt::format("\n[{}] {}\n    {}\n", number, q.intro, s.help);
  if (s.type == Type::Choice) {
    std::string list;
    for (size_t i = 0; i < s.choices.size(); ++i) list += fmt::format("  {}) {}", i + 1, s.choices[i]);
    out << "   " << list << "\n";
  } else {
    out << "    (" << describe_type(s) << ")\n";
  }
}

// Checks an answer against what is known so far (e.g. n_embd against n_head): throws the first
// error of a cross-check that involves this key and only keys answered already.
void check_answer(const Registry& reg, const Answers& answers, const std::string& key, const json& v) {
  Answers trial = answers;
  trial.values[key] = v;
  const Resolved t = trial.job(reg);
  // A token file is checked as the launcher will (exists, header agrees with its size) when the
  // ranks run on this machine.
  const LauncherKind launcher = choice_at<LauncherKind>(t.job, "launch.launcher");
  if ((key == "data.path" || key == "data.val_path") &&
      (launcher == LauncherKind::Local || (launcher == LauncherKind::Auto && text_of(t.job, "launch.hostfile").empty())))
    check_data_files(t.job);
  // etcd has no default members: an empty list would only be refused at submit or launch.
  if (key == "launch.rdzv_endpoint" && choice_at<RdzvBackend>(t.job, "launch.rdzv_backend") == RdzvBackend::Etcd &&
      text_of(t.job, key).empty())
    throw Error("the etcd backend needs its members", "Type them as host1:2379,host2:2379,host3:2379");
  for (const auto& p : cross_check(reg, t)) {
    bool involves = false, all_known = true;
    for (const auto& k : p.keys) {
      involves = involves || k == key;
      all_known = all_known && trial.values.count(k);
    }
    if (p.error && involves && all_known) throw Error(p.message, p.hint);
  }
}

// Lists the module classes of the model file (opt.module_classes) under the FSDP units question,
// and returns the check that each class named is one of them (a dotted name such as blocks.0 is a
// submodule path, left to the worker). No list (unset, or it throws): said, and no check.
std::function<void(const json&)> offer_module_classes(const WizardOptions& opt, const std::string& model_path,
                                                      std::ostream& out) {
  if (!opt.module_classes) return {};
  std::vector<std::string> classes;
  try {
    classes = opt.module_classes(model_path);
  } catch (const Error& e) {
    out << "    (no list of its module classes: " << e.message() << ")\n";
    return {};
  }
  if (classes.empty()) {
    out << "    (no module classes listed for " << model_path << ")\n";
    return {};
  }
  out << "    module classes in " << model_path << ": " << str::join(classes, ", ") << "\n";
  std::set<std::string> known;
  for (const auto& c : classes) known.insert(c.substr(0, c.find(" (x")));
  return [known, classes, model_path](const json& v) {
    for (const auto& item : v) {
      const std::string name = item.get<std::string>();
      if (name.find('.') == std::string::npos && !known.count(name))
        throw Error(fmt::format("'{}' is not a module class of {}", name, model_path),
                    fmt::format("Name one or more of: {} (or a dotted submodule name such as blocks.0)",
                                str::join(classes, ", ")));
    }
  };
}

// Prompts until an answer is accepted; a refused one is explained and asked again.
json ask(const Registry& reg, const Answers& answers, const Setting& s, const std::string& key, const json& current,
         std::istream& in, std::ostream& out, const std::function<void(const json&)>& also_check = {}) {
  for (;;) {
    out << fmt::format("  {} [{}]: ", key, shown(current)) << std::flush;
    std::string line;
    if (!std::getline(in, line))
      throw Error("the input ended before the last question; no file was written",
                  "Run `mtrain config init` on a terminal, or pass --defaults and --set key=value.");
    try {
      json v = interpret(reg, s, line, current);
      check_answer(reg, answers, key, v);
      if (also_check) also_check(v);
      return v;
    } catch (const Error& e) {
      out << "  not accepted: " << e.message() << (e.hint().empty() ? "" : ". " + e.hint()) << "\n";
    }
  }
}

}  // namespace

std::map<std::string, json> run_wizard(const Registry& reg, std::istream& in, std::ostream& out,
                                       const WizardOptions& opt) {
  Answers answers;
  for (const auto& layer : set_layers(reg, opt.sets))
    for (const auto& [k, v] : layer.values) answers.values[k] = v, answers.preset.insert(k);
  if (!opt.use_defaults)
    out << "mtrain config init: answer each question, or press Enter to keep the value in [brackets].\n";
  int number = 0;
  for (const auto& q : script()) {
    Resolved r = answers.job(reg);
    if (!q.when(r.job)) continue;
    const bool preset = answers.preset.count(q.key) > 0;
    if (q.key == "strategy" && opt.advise && !preset && !opt.use_defaults) advise_strategy(reg, opt, answers, r, out);
    const Setting& s = reg.require(q.key);
    // Under Slurm a fixed node count is the allocation's: offered as the default and, when kept,
    // left out of the file (only an elastic MIN:MAX is the launcher's own).
    const bool slurm_nnodes =
        q.key == "launch.nnodes" && choice_at<LauncherKind>(r.job, "launch.launcher") == LauncherKind::Slurm;
    const json current = slurm_nnodes && !answers.values.count(q.key)
                             ? json(std::to_string(get(r.job, "slurm.nodes").get<long long>()))
                             : get(r.job, q.key);
    ++number;
    if (preset) {
      out << fmt::format("[{}] {}: {} (from --set)\n", number, q.key, shown(current));
    } else if (opt.use_defaults) {
      answers.values[q.key] = current;
    } else {
      print_question(q, s, number, out);
      std::function<void(const json&)> also_check;
      if (q.key == "fsdp.wrap_module_types") also_check = offer_module_classes(opt, text_of(r.job, "model.path"), out);
      if (q.key == "model.path" && opt.check_model)
        also_check = [&](const json& v) {
          Answers trial = answers;
          trial.values[q.key] = v;
          const json job = trial.job(reg).job;
          if (ranks_run_here(job)) opt.check_model(job);  // elsewhere the launcher checks it on the node
        };
      answers.values[q.key] = ask(reg, answers, s, q.key, current, in, out, also_check);
    }
    if (slurm_nnodes && !preset) {
      const NodeCountReading n = read_nnodes(text_of(answers.job(reg).job, q.key));
      if (!n.problem.empty() || !n.count.elastic()) answers.values.erase(q.key);
    }
  }
  return answers.values;
}

std::string wizard_yaml(const Registry& reg, const std::map<std::string, json>& values,
                        const std::string& file_name) {
  YamlOptions opt;
  opt.help_comments = true;
  opt.header = {"mtrain job file, written by `mtrain config init`.",
                "Run it:      mtrain launch --config " + file_name,
                "Check it:    mtrain config validate " + file_name,
                "All values:  mtrain config show --config " + file_name + " --sources",
                "Relative paths of the files it reads (model.path, model.init, data.path, data.val_path) are",
                "from this file's folder; train.work_dir and log folders from where mtrain runs.",
                "Every setting not listed here keeps its default (`mtrain config docs`)."};
  return to_yaml(reg, values, opt);
}

std::string init_job_file(const Registry& reg, const InitOptions& opt, std::istream& in, std::ostream& out) {
  struct stat st {};
  if (!opt.force && ::stat(opt.output.c_str(), &st) == 0)
    throw Error(fmt::format("{} already exists; nothing was changed", opt.output),
                "Pass --force to overwrite it, or -o to write another file.");
  auto answers = run_wizard(reg, in, out, opt.wizard);
  // The answers name files from the current folder; the file names them from its own folder.
  namespace fs = std::filesystem;
  const fs::path folder = fs::absolute(fs::path(opt.output)).lexically_normal().parent_path();
  for (const auto& key : file_folder_relative_keys()) {
    auto it = answers.find(key);
    if (it == answers.end() || !it->second.is_string() || it->second.get<std::string>().empty()) continue;
    const fs::path p = it->second.get<std::string>();
    if (p.is_absolute()) continue;
    const fs::path from_file = fs::absolute(p).lexically_normal().lexically_relative(folder);
    it->second = (from_file.empty() ? fs::absolute(p).lexically_normal() : from_file).string();
  }
  std::string text = wizard_yaml(reg, answers, opt.output);
  // The file must read back as a valid job: anything else is a bug in the wizard, not the user.
  ValidateReport rep = validate_text_for(reg, text, opt.output, opt.wizard.check_model);
  if (!rep.ok())
    throw Error("the answers do not make a valid job:\n" + format_report(rep),
                "Change the answers above (or the --set values) and run it again.");
  write_file(opt.output, text, opt.force);
  out << fmt::format("\nWrote {} ({} settings). Run it with: mtrain launch --config {}\n", opt.output,
                     answers.size(), opt.output);
  return text;
}

}  // namespace mtrain::config
