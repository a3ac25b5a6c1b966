#include "lib/config/cross_checks.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "lib/config/data_checks.hpp"
#include "lib/config/job_choice.hpp"
#include "lib/config/launch_choices.hpp"
#include "lib/config/names.hpp"
#include "lib/core/counted.hpp"
#include "lib/core/node_count.hpp"
#include "lib/config/sharding_choices.hpp"
#include "lib/config/train_choices.hpp"
#include "lib/config/rank_count.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/untrusted_file.hpp"

namespace mtrain::config {

namespace {

bool given(const Resolved& r, const std::string& key) {
  auto it = r.provenance.find(key);
  return it != r.provenance.end() && it->second.first != Source::Default;
}

int effective_zero_stage(const json& job) {
  if (is_auto_strategy(as_text(job, "strategy"))) return static_cast<int>(as_int(job, "zero.stage"));
  const StrategyName strategy = strategy_from_text(as_text(job, "strategy"));
  if (is_zero(strategy)) return zero_stage(strategy);
  return static_cast<int>(as_int(job, "zero.stage"));
}

// model.name compiled: a package folder (python -m mtrain_export), native code that runs only
// with model.trust_code. The manifest itself, the PyTorch it was compiled by and model.init
// against its tensor table are the launcher's check (launch/model_check.hpp), which knows the worker.
std::vector<Problem> compiled_package_problems(const json& job, const std::string& path, const std::string& eval_path) {
  std::vector<Problem> out;
  const char* fix =
      "Set model.path (--model-path) to the folder `mtrain export MODULE.py:FACTORY --example "
      "... --wrap-module-types ... --out DIR` wrote (docs/your-model.md).";
  std::error_code ec;
  if (path.empty()) {
    out.push_back({true, {"model.path"}, "model.path is empty but model.name is compiled", fix});
  } else if (ranks_run_here(job) && !std::filesystem::is_directory(path, ec)) {
    out.push_back({true,
                   {"model.path"},
                   fmt::format("model.path '{}' is not a folder: a compiled package is the folder "
                               "holding manifest.json, model.safetensors and programs/",
                               path),
                   fix});
  }
  if (!get(job, "model.trust_code").get<bool>())
    out.push_back({true,
                   {"model.trust_code", "model.name"},
                   fmt::format("model.name is compiled but model.trust_code is false: the package '{}' holds native "
                               "code (each program in programs/ is a compiled shared library that runs when it is "
                               "loaded), which mtrain runs only when you trust whoever compiled it",
                               path),
                   "Set model.trust_code true (--set model.trust_code=true) for a package you or someone you trust "
                   "exported, or export the model yourself with mtrain export."});
  if (!eval_path.empty())
    out.push_back(
        {true,
         {"model.eval_path", "model.name"},
         fmt::format("model.eval_path '{}' is set but model.name is compiled, which does not read it", eval_path),
         "Validation runs the package's own programs: drop model.eval_path."});
  return out;
}

// Pretrained weights: the file must be there before any rank starts (ssh hosts may see other
// files than this machine, so only local and Slurm launches are checked here).
void init_weights_problems(const json& job, std::vector<Problem>& out) {
  const std::string init = as_text(job, "model.init");
  std::error_code ec;
  // Not only "exists": a FIFO or a link to a device exists too, and is named as what it is.
  const std::string init_problem =
      init.empty() || choice_at<LauncherKind>(job, "launch.launcher") == LauncherKind::Ssh || std::filesystem::is_directory(init, ec)
          ? std::string()
          : not_regular_file(init);
  if (init_problem.empty()) return;
  out.push_back({true,
                 {"model.init"},
                 fmt::format("model.init '{}' {}", init, init_problem),
                 "Give a .safetensors file, a torch.save'd state dict, an mtrain model.pt or a "
                 "checkpoint folder (a relative path in a job file is from the job file's folder, else from the "
                 "current folder)."});
}

// A built-in model with model.path or model.eval_path: `--model-path net.pt` alone would train the
// built-in gpt, and every rank fail on the data.
void unread_model_file_problems(const json& job, bool model_given, std::vector<Problem>& out) {
  const std::string path = as_text(job, "model.path");
  const std::string eval_path = as_text(job, "model.eval_path");
  const std::string model = as_text(job, "model.name");
  if (!path.empty())
    out.push_back({true,
                   {"model.path", "model.name"},
                   fmt::format("model.path '{}' is set but model.name is {}{}, which does not read it", path, model,
                               model_given ? "" : " (the default)"),
                   "Add --model torchscript (model.name: torchscript in a job file) to train the TorchScript "
                   "module in model.path, or drop model.path."});
  if (!eval_path.empty())
    out.push_back({true,
                   {"model.eval_path", "model.name"},
                   fmt::format("model.eval_path '{}' is set but model.name is {}{}, which does not read it", eval_path,
                               model, model_given ? "" : " (the default)"),
                   "model.eval_path is the eval-mode trace of a TorchScript model.path: add --model torchscript, "
                   "or drop model.eval_path."});
}

// The TorchScript files: checked here so a typo fails before any rank starts.
void torchscript_file_problems(const json& job, std::vector<Problem>& out) {
  const std::string path = as_text(job, "model.path");
  const std::string eval_path = as_text(job, "model.eval_path");
  std::error_code ec;
  const char* fix = "Set model.path (--model-path) to the file written by torch.jit.save(torch.jit.script(module), PATH).";
  if (path.empty()) {
    out.push_back({true, {"model.path"}, "model.path is empty but model.name is torchscript", fix});
  } else if (ranks_run_here(job) && !std::filesystem::is_regular_file(path, ec)) {
    const std::string why = not_regular_file(path);
    out.push_back({true, {"model.path"}, fmt::format("model.path '{}' {}", path, why.empty() ? "is not a file" : why), fix});
  }
  if (!eval_path.empty() && ranks_run_here(job) && !std::filesystem::is_regular_file(eval_path, ec)) {
    const std::string why = not_regular_file(eval_path);
    out.push_back({true,
                   {"model.eval_path"},
                   fmt::format("model.eval_path '{}' {}", eval_path, why.empty() ? "is not a file" : why),
                   "Set model.eval_path to the eval-mode trace of model.path's module "
                   "(torch.jit.save(torch.jit.trace(model.eval(), example), PATH)), or leave it empty."});
  }
}

// Settings of a TorchScript model that need something of it.
void torchscript_setting_problems(const json& job, std::vector<Problem>& out) {
  // The trainer counts the targets itself; a loss it does not compute has no targets it can count.
  const LossName loss = choice_at<LossName>(job, "model.loss");
  if (get(job, "train.average_tokens_across_ranks").get<bool>() && loss != LossName::CrossEntropy &&
      loss != LossName::LmCrossEntropy) {
    out.push_back({true,
                   {"train.average_tokens_across_ranks", "model.loss"},
                   fmt::format("train.average_tokens_across_ranks is true but model.loss is {}, whose targets the "
                               "trainer does not count",
                               to_string(loss)),
                   "Set model.loss to lm_cross_entropy (logits [B, T, V]) or cross_entropy (logits [B, C]), whose "
                   "targets of -100 are ignored, or leave train.average_tokens_across_ranks false."});
  }
  // Checkpointing recomputes the named blocks (or FSDP's size units): something must be named.
  if (get(job, "fsdp.activation_checkpointing").get<bool>() && get(job, "fsdp.wrap_module_types").empty() &&
      choice_at<WrapPolicy>(job, "fsdp.wrap_policy") != WrapPolicy::Size) {
    out.push_back({true, {"fsdp.activation_checkpointing", "fsdp.wrap_module_types"},
                   "fsdp.activation_checkpointing is on but the torchscript model has no blocks to "
                   "recompute: fsdp.wrap_module_types is empty",
                   "Name the block submodules in fsdp.wrap_module_types (class names such as Block, "
                   "or dotted names such as blocks.0), or set fsdp.wrap_policy size."});
  }
}

// Files of the model, not the data: pretrained weights (model.init) and the user's model.
// `model_given`: model.name was set (not its default), for the message.
std::vector<Problem> model_file_problems(const json& job, bool model_given) {
  std::vector<Problem> out;
  init_weights_problems(job, out);
  switch (model_from_text(as_text(job, "model.name"))) {
    case ModelName::Compiled:
      for (Problem& p : compiled_package_problems(job, as_text(job, "model.path"), as_text(job, "model.eval_path")))
        out.push_back(std::move(p));
      break;
    case ModelName::Torchscript:
      torchscript_file_problems(job, out);
      torchscript_setting_problems(job, out);
      break;
    default: unread_model_file_problems(job, model_given, out);
  }
  return out;
}

// Launch topology and how the program runs.
std::vector<Problem> launch_problems(const Resolved& r) {
  const json& job = r.job;
  std::vector<Problem> out;
  const LauncherKind launcher = choice_at<LauncherKind>(job, "launch.launcher");
  if (launcher == LauncherKind::Local && min_nodes(job) > 1) {
    out.push_back({true, {"launch.nnodes", "launch.launcher"},
                   fmt::format("launch.nnodes is {} but launch.launcher is 'local' (this machine only)",
                               min_nodes(job)),
                   "Use launcher ssh with a hostfile, or slurm."});
  }
  if (launcher == LauncherKind::Ssh && as_text(job, "launch.hostfile").empty()) {
    out.push_back({true, {"launch.launcher", "launch.hostfile"},
                   "launch.launcher is 'ssh' but no launch.hostfile names the hosts",
                   "Give --hostfile FILE (launch.hostfile), a file with lines like 'worker-0 slots=8'."});
  }
  // How the program runs: -m needs Python, --no-python rules it out.
  if (get(job, "launch.module").get<bool>() && get(job, "launch.no_python").get<bool>()) {
    out.push_back({true, {"launch.module", "launch.no_python"}, "-m/--module and --no-python contradict each other",
                   "Keep -m to run PROGRAM as a Python module, or --no-python to execute it directly."});
  }
  // An elastic MIN:MAX holds the allocation's node count (`mtrain slurm submit` checks the same);
  // a fixed count must be it.
  const NodeCountReading nn = read_nnodes(as_text(job, "launch.nnodes"));
  const bool elastic = nn.problem.empty() && nn.count.elastic();
  const long long alloc = as_int(job, "slurm.nodes");
  if (launcher == LauncherKind::Slurm && given(r, "launch.nnodes") && given(r, "slurm.nodes") &&
      (elastic ? (alloc < nn.count.min || alloc > nn.count.max) : min_nodes(job) != alloc)) {
    out.push_back({true,
                   {"launch.nnodes", "slurm.nodes"},
                   fmt::format("launch.nnodes {} and slurm.nodes {} disagree", as_text(job, "launch.nnodes"), alloc),
                   elastic ? "Allocate MAX nodes (slurm.nodes) and give MIN:MAX around it."
                           : "Set only slurm.nodes; the launcher takes the node count from the allocation."});
  }
  return out;
}

}  // namespace

// The TorchScript model file is checked on this machine only when the ranks run here; on ssh/Slurm
// nodes the launcher checks it on the node before any rank starts (launch/model_check.hpp).
bool ranks_run_here(const json& job) {
  const LauncherKind starter = choice_at<LauncherKind>(job, "launch.launcher");
  return starter == LauncherKind::Local || (starter == LauncherKind::Auto && as_text(job, "launch.hostfile").empty());
}

long long min_nodes(const json& job) {
  const std::string t = as_text(job, "launch.nnodes");
  return static_cast<long long>(str::parse_uint(t.substr(0, t.find(':'))).value_or(1));
}

long long known_world_size(const json& job) {
  const auto nproc = read_rank_count(as_text(job, "launch.nproc_per_node")).value;
  if (!nproc || nproc->kind != RankCount::Kind::N || as_text(job, "launch.nnodes").find(':') != std::string::npos)
    return 0;  // a count that depends on the host, or elastic: not known
  return nproc->n * min_nodes(job);
}

std::vector<Problem> batch_problems(const json& job, long long world) {
  std::vector<Problem> out;
  const long long global = as_int(job, "train.global_batch_size");
  const long long micro = as_int(job, "train.batch_size"), accum = as_int(job, "train.grad_accum");
  if (global <= 0) return out;
  if (world > 0 && global != micro * accum * world) {
    out.push_back({true, {"train.global_batch_size", "train.batch_size", "train.grad_accum", "launch.nproc_per_node"},
                   fmt::format("train.global_batch_size is {} but batch_size {} x grad_accum {} x "
                               "world size {} is {}",
                               global, micro, accum, world, micro * accum * world),
                   global % world == 0
                       ? fmt::format("With {}, batch_size x grad_accum must be {}; or set "
                                     "train.global_batch_size to 0 to derive it.",
                                     counted(world, "rank"), global / world)
                       : fmt::format("{} cannot be split evenly over {}: change the world size or "
                                     "train.global_batch_size, or set it to 0 to derive it.",
                                     counted(global, "sample"), counted(world, "rank"))});
  } else if (world == 0 && global % (micro * accum) != 0) {
    out.push_back({true, {"train.global_batch_size", "train.batch_size", "train.grad_accum"},
                   fmt::format("train.global_batch_size {} is not a multiple of batch_size {} x "
                               "grad_accum {}",
                               global, micro, accum),
                   "No world size could make these agree."});
  }
  return out;
}

namespace {

// ZeRO stage against the strategy, and offloading against the stage. Not for `auto`.
std::vector<Problem> zero_problems(const json& job) {
  std::vector<Problem> out;
  const std::string strategy = as_text(job, "strategy");
  const StrategyName strategy_id = strategy_from_text(strategy);
  const long long stage = as_int(job, "zero.stage");
  if (stage != 0 && zero_stage(strategy_id) != stage) {
    out.push_back({true, {"zero.stage", "strategy"},
                   fmt::format("zero.stage is {} but strategy is '{}'", stage, strategy),
                   fmt::format("Set strategy to zero{} (or zero.stage to 0 to follow strategy).", stage)});
  }
  const int zstage = effective_zero_stage(job);
  if (choice_at<OffloadDevice>(job, "zero.offload_param_device") != OffloadDevice::None && zstage != 3) {
    out.push_back({true, {"zero.offload_param_device", "strategy"},
                   fmt::format("zero.offload_param_device is '{}' but parameters are only sharded "
                               "(and so only offloadable) with ZeRO stage 3; strategy is '{}'",
                               as_text(job, "zero.offload_param_device"), strategy),
                   "Use strategy zero3, or fsdp.cpu_offload with strategy fsdp."});
  }
  if (choice_at<OffloadDevice>(job, "zero.offload_optimizer_device") != OffloadDevice::None && zstage == 0) {
    out.push_back({true, {"zero.offload_optimizer_device", "strategy"},
                   fmt::format("zero.offload_optimizer_device is '{}' but strategy '{}' is not a "
                               "ZeRO stage",
                               as_text(job, "zero.offload_optimizer_device"), strategy),
                   "Use strategy zero1, zero2 or zero3."});
  }
  return out;
}

// Knobs of a strategy that is not in use (fsdp.*, ddp.* given by the user): accepted, but they
// do nothing. Warnings. Not for `auto`.
std::vector<Problem> unused_knob_problems(const Registry& reg, const Resolved& r) {
  const json& job = r.job;
  std::vector<Problem> out;
  const std::string strategy = as_text(job, "strategy");
  const StrategyName strategy_id = strategy_from_text(strategy);
  const ModelName model = model_from_text(as_text(job, "model.name"));
  for (const auto& [prefix, owner] : {std::pair<std::string, StrategyName>{"fsdp.", StrategyName::Fsdp},
                                      {"ddp.", StrategyName::Ddp}}) {
    for (const auto& s : reg.all()) {
      // Activation checkpointing is honoured by every strategy (the key keeps accelerate's name).
      if (s.key == "fsdp.activation_checkpointing") continue;
      // A TorchScript model's blocks (checkpointing, ZeRO-3 units) are named by these.
      if (model == ModelName::Torchscript &&
          (s.key == "fsdp.wrap_module_types" ||
           (get(job, "fsdp.activation_checkpointing").get<bool>() &&
            (s.key == "fsdp.wrap_policy" || s.key == "fsdp.min_num_params"))))
        continue;
      if (s.key.rfind(prefix, 0) == 0 && given(r, s.key) && strategy_id != owner) {
        out.push_back({false, {s.key, "strategy"},
                       fmt::format("{} is set but strategy is '{}', so it has no effect", s.key, strategy),
                       fmt::format("Set strategy to {} or drop the setting.", to_string(owner))});
      }
    }
  }
  return out;
}

// Loss scaling (precision.*) is an fp16 feature. Warnings.
std::vector<Problem> loss_scaling_problems(const Registry& reg, const Resolved& r) {
  const json& job = r.job;
  std::vector<Problem> out;
  if (choice_at<Precision>(job, "train.precision") == Precision::Fp16) return out;
  for (const auto& s : reg.all()) {
    if (s.key.rfind("precision.", 0) == 0 && given(r, s.key)) {
      out.push_back({false, {s.key, "train.precision"},
                     fmt::format("{} is set but train.precision is '{}'; loss scaling only "
                                 "applies to fp16",
                                 s.key, as_text(job, "train.precision")),
                     "Set train.precision to fp16 or drop the setting."});
    }
  }
  return out;
}

// Model shapes.
std::vector<Problem> model_shape_problems(const json& job) {
  std::vector<Problem> out;
  if (model_from_text(as_text(job, "model.name")) == ModelName::Gpt &&
      as_int(job, "model.n_embd") % as_int(job, "model.n_head") != 0) {
    out.push_back({true, {"model.n_embd", "model.n_head"},
                   fmt::format("model.n_embd {} is not divisible by model.n_head {}",
                               as_int(job, "model.n_embd"), as_int(job, "model.n_head")),
                   "Each attention head gets n_embd / n_head dimensions; pick values that divide."});
  }
  return out;
}

// Schedule.
std::vector<Problem> schedule_problems(const json& job) {
  std::vector<Problem> out;
  if (choice_at<ScheduleName>(job, "sched.name") == ScheduleName::Cosine && get(job, "sched.min_lr").get<double>() > get(job, "optim.lr").get<double>()) {
    out.push_back({true, {"sched.min_lr", "optim.lr"},
                   fmt::format("sched.min_lr {} is above the peak optim.lr {}",
                               get(job, "sched.min_lr").get<double>(), get(job, "optim.lr").get<double>()),
                   "The cosine schedule decays from optim.lr down to sched.min_lr."});
  }
  return out;
}

void append(std::vector<Problem>& out, std::vector<Problem> more) {
  for (auto& p : more) out.push_back(std::move(p));
}

}  // namespace

std::vector<Problem> cross_check(const Registry& reg, const Resolved& r) {
  const json& job = r.job;
  std::vector<Problem> out;
  append(out, batch_problems(job, known_world_size(job)));
  append(out, data_model_problems(job));
  // `auto`: the strategy checks run again once the launcher has chosen (lib/estimate picks
  // among the strategies these settings allow).
  if (!is_auto_strategy(as_text(job, "strategy"))) {
    append(out, zero_problems(job));
    append(out, unused_knob_problems(reg, r));
  }
  append(out, loss_scaling_problems(reg, r));
  append(out, model_shape_problems(job));
  append(out, model_file_problems(job, given(r, "model.name")));
  // The dataset's files, from the one table (data_checks.cpp): here what the settings alone show
  // (a needed path left empty); the files themselves on the host whose ranks read them, before
  // any rank starts (check_before_launch, check_data_files), since a job file is often checked
  // where its data is not (a login node before `mtrain slurm submit`).
  append(out, data_file_problems(job, false));
  append(out, schedule_problems(job));
  append(out, launch_problems(r));
  return out;
}

}  // namespace mtrain::config
