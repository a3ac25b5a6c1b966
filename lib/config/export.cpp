// Job → DeepSpeed ds_config.json / accelerate config and environment. Key names and value types
// follow DeepSpeed's config reference and accelerate's launcher; each is the inverse of what
// import_deepspeed.cpp / import_accelerate.cpp map (tests/unit/config/test_export.cpp proves
// import(export(job)) for every key listed in `mapped`).
#include "lib/config/export.hpp"

#include <fmt/format.h>

#include "lib/config/cross_checks.hpp"
#include "lib/config/foreign_keys.hpp"
#include "lib/config/job_choice.hpp"
#include "lib/config/names.hpp"
#include "lib/config/sharding_choices.hpp"
#include "lib/config/train_choices.hpp"
#include "lib/config/rank_count.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::config {

namespace {

StrategyName strategy_of(const json& job) { return strategy_from_text(as_text(job, "strategy")); }

std::string num_text(double v) { return json(v).dump(); }

// accelerate's mixed_precision / ACCELERATE_MIXED_PRECISION: "no" for fp32, else mtrain's name.
std::string accelerate_precision(const json& job) {
  const Precision p = choice_at<Precision>(job, "train.precision");
  return p == Precision::Fp32 ? "no" : to_string(p);
}

using Mapped = decltype(ExportResult::mapped);

// The batch sizes, clipping, logging interval and precision sections.
void ds_batch_and_precision(const json& job, long long world_size, json& ds, Mapped& m) {
  const long long micro = as_int(job, "train.batch_size"), accum = as_int(job, "train.grad_accum");
  ds["train_micro_batch_size_per_gpu"] = micro;
  ds["gradient_accumulation_steps"] = accum;
  m.insert({"train.batch_size", "train.grad_accum"});
  // DeepSpeed's train_batch_size is the global batch: micro x accumulation x world size.
  const long long global = as_int(job, "train.global_batch_size");
  if (global > 0) ds["train_batch_size"] = global;
  else if (world_size > 0) ds["train_batch_size"] = micro * accum * world_size;
  m.insert("train.global_batch_size");
  ds["gradient_clipping"] = as_num(job, "optim.grad_clip");
  ds["steps_per_print"] = as_int(job, "train.log_interval");
  m.insert({"optim.grad_clip", "train.log_interval", "train.precision"});

  const Precision precision = choice_at<Precision>(job, "train.precision");
  ds["bf16"] = {{"enabled", precision == Precision::Bf16}};
  ds["fp16"] = {{"enabled", precision == Precision::Fp16}};
  if (precision == Precision::Fp16) {
    for (const auto& [name, key] : foreign::kFp16Keys) {
      ds["fp16"][name] = get(job, key);
      m.insert(key);
    }
  }

}

// zero_optimization: the stage of the strategy, the zero.* keys ('auto' resolved), offload.
void ds_zero(const json& job, json& ds, Mapped& m) {
  const StrategyName strategy = strategy_of(job);
  const int stage = zero_stage(strategy);
  const long long embd = as_int(job, "model.n_embd");
  json z;
  z["stage"] = stage;
  for (const auto& [name, key] : foreign::kZeroKeys) {
    const json& v = get(job, key);
    z[name] = v;
    m.insert(key);
    if (!v.is_string()) continue;
    // 'auto' becomes the number the worker would use (lib/trainer/loop/train_job.cpp); DeepSpeed
    // itself takes no "auto".
    const std::string k = key;
    if (k == "zero.overlap_comm") z[name] = stage == 3;
    else if (k == "zero.reduce_bucket_size") z[name] = embd * embd;
    else if (k == "zero.stage3_prefetch_bucket_size") z[name] = embd * embd * 9 / 10;
    else if (k == "zero.stage3_param_persistence_threshold") z[name] = 10 * embd;
  }
  if (choice_at<OffloadDevice>(job, "zero.offload_optimizer_device") != OffloadDevice::None)
    z["offload_optimizer"] = {{"device", as_text(job, "zero.offload_optimizer_device")}};
  if (choice_at<OffloadDevice>(job, "zero.offload_param_device") != OffloadDevice::None)
    z["offload_param"] = {{"device", as_text(job, "zero.offload_param_device")}};
  ds["zero_optimization"] = z;
  if (strategy != StrategyName::Fsdp) m.insert("strategy");  // DeepSpeed has no FSDP: stage 0 is written
  m.insert({"zero.stage", "zero.offload_optimizer_device", "zero.offload_param_device"});

}

void ds_optimizer(const json& job, json& ds, Mapped& m) {
  const double lr = as_num(job, "optim.lr");
  if (choice_at<OptimizerName>(job, "optim.name") == OptimizerName::Adamw) {
    ds["optimizer"] = {{"type", "AdamW"},
                       {"params", {{"lr", lr},
                                   {"betas", {as_num(job, "optim.beta1"), as_num(job, "optim.beta2")}},
                                   {"eps", as_num(job, "optim.eps")},
                                   {"weight_decay", as_num(job, "optim.weight_decay")}}}};
    m.insert({"optim.beta1", "optim.beta2", "optim.eps"});
  } else {
    ds["optimizer"] = {{"type", "SGD"},
                       {"params", {{"lr", lr},
                                   {"momentum", as_num(job, "optim.momentum")},
                                   {"weight_decay", as_num(job, "optim.weight_decay")},
                                   {"nesterov", as_bool(job, "optim.nesterov")}}}};
    m.insert({"optim.momentum", "optim.nesterov"});
  }
  m.insert({"optim.name", "optim.lr", "optim.weight_decay"});

}

// Schedules: DeepSpeed's WarmupLR / WarmupDecayLR / WarmupCosineLR with a linear warmup from 0.
void ds_scheduler(const json& job, json& ds, Mapped& m) {
  const double lr = as_num(job, "optim.lr");
  const long long warmup = as_int(job, "sched.warmup_steps");
  const long long max_steps = as_int(job, "train.max_steps");
  switch (choice_at<ScheduleName>(job, "sched.name")) {
    case ScheduleName::Constant:
      ds["scheduler"] = {{"type", "WarmupLR"},
                         {"params", {{"warmup_min_lr", 0.0}, {"warmup_max_lr", lr}, {"warmup_num_steps", warmup},
                                     {"warmup_type", "linear"}}}};
      m.insert({"sched.name", "sched.warmup_steps"});
      break;
    case ScheduleName::Linear: {
      // Only a decay to 0 is DeepSpeed's WarmupDecayLR; other factors have no DeepSpeed schedule.
      if (as_num(job, "sched.start_factor") != 1.0 || as_num(job, "sched.end_factor") != 0.0) break;
      const long long iters = as_int(job, "sched.total_iters");
      ds["scheduler"] = {{"type", "WarmupDecayLR"},
                         {"params", {{"warmup_min_lr", 0.0}, {"warmup_max_lr", lr}, {"warmup_num_steps", warmup},
                                     {"total_num_steps", warmup + (iters > 0 ? iters : max_steps)},
                                     {"warmup_type", "linear"}}}};
      m.insert({"sched.name", "sched.warmup_steps", "sched.start_factor", "sched.end_factor", "sched.total_iters"});
      break;
    }
    case ScheduleName::Cosine:
      ds["scheduler"] = {{"type", "WarmupCosineLR"},
                         {"params", {{"warmup_num_steps", warmup}, {"total_num_steps", max_steps},
                                     {"cos_min_ratio", lr > 0 ? as_num(job, "sched.min_lr") / lr : 0.0},
                                     {"warmup_type", "linear"}}}};
      m.insert({"sched.name", "sched.warmup_steps", "sched.min_lr"});
      break;
    case ScheduleName::Step: break;  // DeepSpeed has no such schedule (left unmapped)
  }
}

}  // namespace

ExportResult export_deepspeed(const json& job, long long world_size) {
  ExportResult r;
  ds_batch_and_precision(job, world_size, r.doc, r.mapped);
  ds_zero(job, r.doc, r.mapped);
  ds_optimizer(job, r.doc, r.mapped);
  ds_scheduler(job, r.doc, r.mapped);
  return r;
}

ExportResult export_accelerate(const json& job) {
  ExportResult r;
  json& a = r.doc;
  auto& m = r.mapped;
  a["compute_environment"] = "LOCAL_MACHINE";
  const StrategyName strategy = strategy_of(job);
  const DeviceKind device = choice_at<DeviceKind>(job, "launch.device");
  a["mixed_precision"] = accelerate_precision(job);
  m.insert({"strategy", "train.precision"});
  if (is_zero(strategy)) {
    a["distributed_type"] = "DEEPSPEED";
    json d;
    d["zero_stage"] = zero_stage(strategy);
    d["gradient_accumulation_steps"] = as_int(job, "train.grad_accum");
    d["gradient_clipping"] = as_num(job, "optim.grad_clip");
    d["offload_optimizer_device"] = as_text(job, "zero.offload_optimizer_device");
    d["offload_param_device"] = as_text(job, "zero.offload_param_device");
    d["zero3_save_16bit_model"] = as_bool(job, "zero.stage3_gather_16bit_weights_on_model_save");
    if (!as_text(job, "launch.hostfile").empty()) d["deepspeed_hostfile"] = as_text(job, "launch.hostfile");
    if (!as_text(job, "launch.include").empty()) d["deepspeed_inclusion_filter"] = as_text(job, "launch.include");
    if (!as_text(job, "launch.exclude").empty()) d["deepspeed_exclusion_filter"] = as_text(job, "launch.exclude");
    a["deepspeed_config"] = d;
    m.insert({"zero.stage", "train.grad_accum", "optim.grad_clip", "zero.offload_optimizer_device",
              "zero.offload_param_device", "zero.stage3_gather_16bit_weights_on_model_save", "launch.hostfile",
              "launch.include", "launch.exclude"});
  } else if (strategy == StrategyName::Fsdp) {
    a["distributed_type"] = "FSDP";
    const std::string wrap = as_text(job, "fsdp.wrap_policy");
    const std::string prefetch = as_text(job, "fsdp.backward_prefetch");
    a["fsdp_config"] = {
        {"fsdp_sharding_strategy", as_text(job, "fsdp.sharding_strategy")},
        {"fsdp_auto_wrap_policy", foreign::to_foreign(foreign::kWrapPolicies, wrap)},
        {"fsdp_min_num_params", as_int(job, "fsdp.min_num_params")},
        {"fsdp_backward_prefetch", foreign::to_foreign(foreign::kPrefetch, prefetch)},
        {"fsdp_forward_prefetch", as_bool(job, "fsdp.forward_prefetch")},
        {"fsdp_offload_params", as_bool(job, "fsdp.cpu_offload")},
        {"fsdp_activation_checkpointing", as_bool(job, "fsdp.activation_checkpointing")}};
    m.insert({"fsdp.sharding_strategy", "fsdp.wrap_policy", "fsdp.min_num_params", "fsdp.backward_prefetch",
              "fsdp.forward_prefetch", "fsdp.cpu_offload", "fsdp.activation_checkpointing"});
  } else {
    a["distributed_type"] = device == DeviceKind::Cpu ? "MULTI_CPU" : "MULTI_GPU";
  }
  // Where ranks run. accelerate counts num_processes over all machines.
  const long long nnodes = min_nodes(job);
  a["num_machines"] = nnodes;
  m.insert("launch.nnodes");
  if (const auto n = read_rank_count(as_text(job, "launch.nproc_per_node")).value; n && n->kind == RankCount::Kind::N) {
    a["num_processes"] = n->n * nnodes;
    m.insert("launch.nproc_per_node");
  }
  if (!as_text(job, "launch.master_addr").empty()) a["main_process_ip"] = as_text(job, "launch.master_addr");
  a["main_process_port"] = as_int(job, "launch.master_port");
  if (!as_text(job, "launch.gpus").empty()) a["gpu_ids"] = as_text(job, "launch.gpus");
  a["use_cpu"] = device == DeviceKind::Cpu;
  // accelerate knows the dynamic rendezvous as torchrun's c10d.
  const RdzvBackend rdzv = choice_at<RdzvBackend>(job, "launch.rdzv_backend");
  a["rdzv_backend"] = to_string(rdzv == RdzvBackend::Mtrain ? RdzvBackend::C10d : rdzv);
  m.insert({"launch.master_addr", "launch.master_port", "launch.gpus", "launch.rdzv_backend"});
  if (device != DeviceKind::Gpu) m.insert("launch.device");  // accelerate has no "GPU required"
  return r;
}

std::map<std::string, std::string> accelerate_env(const json& job, std::set<std::string>* mapped) {
  // Names and value spellings as accelerate/utils/launch.py writes them.
  std::map<std::string, std::string> e;
  std::set<std::string> m;
  e["ACCELERATE_MIXED_PRECISION"] = accelerate_precision(job);
  // accelerate sets the accumulation only for DeepSpeed (prepare_deepspeed_cmd_env); Accelerator
  // reads it for every strategy, so mtrain hands a non-default one over for all.
  const StrategyName strategy = strategy_of(job);
  const long long accum = as_int(job, "train.grad_accum");
  if (is_zero(strategy) || accum != 1) e["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"] = std::to_string(accum);
  m.insert({"train.precision", "train.grad_accum", "strategy"});
  if (choice_at<DeviceKind>(job, "launch.device") == DeviceKind::Cpu) e["ACCELERATE_USE_CPU"] = "True";  // str(args.cpu or args.use_cpu)
  // No torch.compile: accelerate's values when no --dynamo_* flag is given (mtrain has none).
  e["ACCELERATE_DYNAMO_BACKEND"] = "NO";
  e["ACCELERATE_DYNAMO_MODE"] = "default";
  e["ACCELERATE_DYNAMO_USE_FULLGRAPH"] = "False";
  e["ACCELERATE_DYNAMO_USE_DYNAMIC"] = "False";
  e["ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION"] = "False";
  if (is_zero(strategy)) {
    e["ACCELERATE_USE_DEEPSPEED"] = "true";
    e["ACCELERATE_DEEPSPEED_ZERO_STAGE"] = std::to_string(zero_stage(strategy));
    e["ACCELERATE_GRADIENT_CLIPPING"] = num_text(as_num(job, "optim.grad_clip"));
    e["ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE"] = as_text(job, "zero.offload_optimizer_device");
    e["ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE"] = as_text(job, "zero.offload_param_device");
    e["ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL"] =
        as_bool(job, "zero.stage3_gather_16bit_weights_on_model_save") ? "true" : "false";
    m.insert({"zero.stage", "optim.grad_clip", "zero.offload_optimizer_device", "zero.offload_param_device",
              "zero.stage3_gather_16bit_weights_on_model_save"});
  } else if (strategy == StrategyName::Fsdp) {
    const std::string wrap = as_text(job, "fsdp.wrap_policy");
    const std::string prefetch = as_text(job, "fsdp.backward_prefetch");
    e["ACCELERATE_USE_FSDP"] = "true";
    e["FSDP_SHARDING_STRATEGY"] = as_text(job, "fsdp.sharding_strategy");
    e["FSDP_OFFLOAD_PARAMS"] = as_bool(job, "fsdp.cpu_offload") ? "true" : "false";
    e["FSDP_MIN_NUM_PARAMS"] = std::to_string(as_int(job, "fsdp.min_num_params"));
    e["FSDP_AUTO_WRAP_POLICY"] = foreign::to_foreign(foreign::kWrapPolicies, wrap);
    e["FSDP_BACKWARD_PREFETCH"] = foreign::to_foreign(foreign::kPrefetch, prefetch);
    e["FSDP_FORWARD_PREFETCH"] = as_bool(job, "fsdp.forward_prefetch") ? "true" : "false";
    e["FSDP_ACTIVATION_CHECKPOINTING"] = as_bool(job, "fsdp.activation_checkpointing") ? "true" : "false";
    m.insert({"fsdp.sharding_strategy", "fsdp.cpu_offload", "fsdp.min_num_params", "fsdp.wrap_policy",
              "fsdp.backward_prefetch", "fsdp.forward_prefetch", "fsdp.activation_checkpointing"});
  }
  if (mapped) *mapped = std::move(m);
  return e;
}

std::vector<std::string> unread_settings(const Registry& reg, const Resolved& r, PassConfig pass_config) {
  std::set<std::string> mapped;
  switch (pass_config) {
    case PassConfig::None: break;
    case PassConfig::Deepspeed: mapped = export_deepspeed(r.job).mapped; break;
    case PassConfig::Accelerate: accelerate_env(r.job, &mapped); break;
  }
  std::vector<std::string> out;
  for (const auto& s : reg.all()) {
    if (s.scope != Scope::Job || mapped.count(s.key)) continue;
    auto it = r.provenance.find(s.key);
    if (it == r.provenance.end() || it->second.first == Source::Default) continue;
    const json& v = get(r.job, s.key);
    out.push_back(s.key + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
  }
  return out;
}

std::string unread_warning(const std::vector<std::string>& unread, PassConfig pass_config) {
  if (unread.empty()) return "";
  if (pass_config != PassConfig::None)
    return fmt::format("launch.pass_config {} has no place for these trainer settings, so the program gets them "
                       "only in MTRAIN_JOB_FILE: {}",
                       to_string(pass_config), str::join(unread, ", "));
  return fmt::format("the program gets these trainer settings only in the file MTRAIN_JOB_FILE names, and "
                     "nothing else hands them over: {}. Set launch.pass_config (--pass-config) to deepspeed "
                     "(each rank gets --deepspeed_config FILE) or accelerate (the variables `accelerate "
                     "launch` sets), or read MTRAIN_JOB_FILE in the program",
                     str::join(unread, ", "));
}

}  // namespace mtrain::config
