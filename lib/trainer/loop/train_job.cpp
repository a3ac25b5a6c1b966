#include "lib/trainer/loop/train_job.hpp"

#include <fmt/format.h>

#include "lib/config/data_checks.hpp"
#include "lib/config/job_choice.hpp"
#include "lib/config/registry.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::trainer {

namespace {

// Typed reads of a job that config::load_job has already checked against the registry, so a
// key is always there and of its setting's type ("auto" only where the setting allows it).
struct Reader {
  const nlohmann::json& job;
  const nlohmann::json& at(const char* key) const { return config::get(job, key); }
  int64_t integer(const char* key) const { return at(key).get<int64_t>(); }
  double number(const char* key) const { return at(key).get<double>(); }
  bool flag(const char* key) const { return at(key).get<bool>(); }
  std::string text(const char* key) const { return at(key).get<std::string>(); }
  template <class E>
  E choice(const char* key) const {
    return config::choice_at<E>(job, key);
  }
  // DeepSpeed's "auto" values (the HuggingFace integration's rule), from the model width.
  template <class F>
  int64_t integer_or_auto(const char* key, F rule) const {
    return at(key).is_string() ? rule() : integer(key);
  }
};

OptimOptions optim_options(const Reader& r) {
  OptimOptions o;
  o.name = r.choice<config::OptimizerName>("optim.name");
  o.weight_decay = r.number("optim.weight_decay");
  o.beta1 = r.number("optim.beta1");
  o.beta2 = r.number("optim.beta2");
  o.eps = r.number("optim.eps");
  o.momentum = r.number("optim.momentum");
  o.nesterov = r.flag("optim.nesterov");
  return o;
}

ScheduleOptions schedule_options(const Reader& r) {
  ScheduleOptions s;
  s.name = r.choice<config::ScheduleName>("sched.name");
  s.lr = r.number("optim.lr");
  s.warmup_steps = r.integer("sched.warmup_steps");
  s.min_lr = r.number("sched.min_lr");
  s.step_size = r.integer("sched.step_size");
  s.gamma = r.number("sched.gamma");
  s.start_factor = r.number("sched.start_factor");
  s.end_factor = r.number("sched.end_factor");
  s.total_iters = r.integer("sched.total_iters");
  return s;
}

ZeroOptions zero_options(const Reader& r, int64_t embd) {
  ZeroOptions z;
  z.allgather_bucket_size = r.integer("zero.allgather_bucket_size");
  z.reduce_bucket_size = r.integer_or_auto("zero.reduce_bucket_size", [&] { return embd * embd; });
  if (const auto& ov = r.at("zero.overlap_comm"); !ov.is_string()) z.overlap_comm = ov.get<bool>();
  z.contiguous_gradients = r.flag("zero.contiguous_gradients");
  z.stage3_prefetch_bucket_size =
      r.integer_or_auto("zero.stage3_prefetch_bucket_size", [&] { return embd * embd * 9 / 10; });
  z.stage3_param_persistence_threshold =
      r.integer_or_auto("zero.stage3_param_persistence_threshold", [&] { return 10 * embd; });
  z.stage3_max_live_parameters = r.integer("zero.stage3_max_live_parameters");
  z.stage3_max_reuse_distance = r.integer("zero.stage3_max_reuse_distance");
  z.offload_optimizer_device = r.choice<config::OffloadDevice>("zero.offload_optimizer_device");
  z.offload_param_device = r.choice<config::OffloadDevice>("zero.offload_param_device");
  z.stage3_gather_16bit_weights_on_model_save = r.flag("zero.stage3_gather_16bit_weights_on_model_save");
  return z;
}

FsdpOptions fsdp_options(const Reader& r) {
  FsdpOptions f;
  f.sharding_strategy = r.choice<config::ShardingStrategy>("fsdp.sharding_strategy");
  f.wrap_policy = r.choice<config::WrapPolicy>("fsdp.wrap_policy");
  f.min_num_params = r.integer("fsdp.min_num_params");
  f.forward_prefetch = r.flag("fsdp.forward_prefetch");
  f.backward_prefetch = r.choice<config::BackwardPrefetch>("fsdp.backward_prefetch");
  f.limit_all_gathers = r.flag("fsdp.limit_all_gathers");
  f.cpu_offload = r.flag("fsdp.cpu_offload");
  return f;
}

LossScaleOptions loss_scale_options(const Reader& r) {
  LossScaleOptions ls;
  ls.loss_scale = r.number("precision.loss_scale");
  ls.initial_scale_power = r.integer("precision.initial_scale_power");
  ls.loss_scale_window = r.integer("precision.loss_scale_window");
  ls.hysteresis = r.integer("precision.hysteresis");
  ls.min_loss_scale = r.number("precision.min_loss_scale");
  return ls;
}

ModelSpec model_spec(const Reader& r) {
  ModelSpec s;
  s.name = config::model_from_text(r.text("model.name"));
  s.n_layer = r.integer("model.n_layer");
  s.n_head = r.integer("model.n_head");
  s.n_embd = r.integer("model.n_embd");
  s.block_size = r.integer("model.block_size");
  s.vocab_size = r.integer("model.vocab_size");
  s.dropout = r.number("model.dropout");
  s.hidden = r.integer("model.hidden");
  s.depth = r.integer("model.depth");
  s.input_dim = r.integer("model.input_dim");
  s.num_classes = r.integer("model.num_classes");
  s.path = r.text("model.path");
  s.eval_path = r.text("model.eval_path");
  s.loss = r.choice<config::LossName>("model.loss");
  s.wrap_module_types = str::join(r.at("fsdp.wrap_module_types").get<std::vector<std::string>>(), ",");
  s.wrap_policy = r.choice<config::WrapPolicy>("fsdp.wrap_policy");
  s.min_num_params = r.integer("fsdp.min_num_params");
  s.activation_checkpointing = r.flag("fsdp.activation_checkpointing");
  s.trust_code = r.flag("model.trust_code");
  s.language_model =
      s.loss == config::LossName::LmCrossEntropy || r.choice<config::DataName>("data.name") == config::DataName::Tokens;
  return s;
}

DataSpec data_spec(const Reader& r) {
  DataSpec s;
  s.name = config::effective_data_name(r.job);
  s.path = r.text("data.path");
  s.val_path = r.text("data.val_path");
  s.num_samples = r.integer("data.num_samples");
  s.val_fraction = r.number("data.val_fraction");
  s.shuffle = r.flag("data.shuffle");
  s.drop_last = r.flag("data.drop_last");
  return s;
}

tracking::TrackingOptions tracking_options(const Reader& r) {
  tracking::TrackingOptions t;
  t.tensorboard_dir = r.text("log.tensorboard");
  t.mlflow_uri = r.text("log.mlflow.uri");
  t.mlflow_experiment = r.text("log.mlflow.experiment");
  t.mlflow_run_name = r.text("log.mlflow.run_name");
  for (const auto& tag : r.at("log.mlflow.tags").get<std::vector<std::string>>()) {
    const size_t eq = tag.find('=');  // the registry's check: KEY=VALUE with a key
    t.mlflow_tags.emplace_back(tag.substr(0, eq), tag.substr(eq + 1));
  }
  return t;
}

}  // namespace

TrainJob train_job_from_json(const nlohmann::json& job, const std::string& origin) {
  // Unknown keys, wrong types and out-of-range values fail here, naming origin and key; every
  // missing key takes its registry default.
  const nlohmann::json full = config::load_job(config::job_registry(), job, origin);
  const Reader r{full};
  TrainJob t;
  t.strategy = config::strategy_from_text(r.text("strategy"));
  // zero.stage (DeepSpeed's name, which imports write beside strategy) only has to agree.
  if (const int64_t stage = r.integer("zero.stage"); stage != 0 && stage != t.zero_stage()) {
    throw UsageError(fmt::format("zero.stage is {} but strategy is '{}'", stage, config::to_string(t.strategy)),
                     fmt::format("set strategy to zero{} (or zero.stage to 0 to follow strategy)", stage))
        .at(origin);
  }
  t.strat.bucket_cap_mb = r.number("ddp.bucket_cap_mb");
  t.strat.first_bucket_mb = r.number("ddp.first_bucket_mb");
  t.strat.find_unused_parameters = r.flag("ddp.find_unused_parameters");
  t.strat.grad_clip = r.number("optim.grad_clip");
  t.strat.optim = optim_options(r);
  t.strat.zero = zero_options(r, r.integer("model.n_embd"));
  t.strat.fsdp = fsdp_options(r);
  t.strat.precision = r.choice<config::Precision>("train.precision");
  t.strat.loss_scale = loss_scale_options(r);
  t.sched = schedule_options(r);
  t.model = model_spec(r);
  t.data = data_spec(r);
  t.max_steps = r.integer("train.max_steps");
  t.max_epochs = r.integer("train.max_epochs");
  t.batch_size = r.integer("train.batch_size");
  t.grad_accum = r.integer("train.grad_accum");
  t.global_batch_size = r.integer("train.global_batch_size");
  t.average_tokens_across_ranks = r.flag("train.average_tokens_across_ranks");
  t.seed = r.at("train.seed").get<uint64_t>();
  t.work_dir = r.text("train.work_dir");
  t.log_interval = r.integer("train.log_interval");
  t.timing_warmup_steps = r.integer("train.timing_warmup_steps");
  t.val_interval = r.integer("train.val_interval");
  t.val_steps = r.integer("train.val_steps");
  t.threads = r.integer("train.threads");
  t.cpu_memory_pool = r.flag("train.cpu_memory_pool");
  t.checkpoint_interval = r.integer("checkpoint.interval");
  t.checkpoint_keep = r.integer("checkpoint.keep");
  t.resume = config::resume_from_text(r.text("checkpoint.resume"));
  t.overwrite = r.flag("checkpoint.overwrite");
  t.init = r.text("model.init");
  t.init_strict = r.flag("model.init_strict");
  t.hf_config = r.text("model.hf_config");
  if (r.text("model.hf_prefix") != "auto") t.hf_prefix = r.text("model.hf_prefix");
  t.comm_timeout_s = r.number("comm.timeout_s");
  t.comm_shared_memory = r.flag("comm.shared_memory");
  t.tracking = tracking_options(r);
  t.settings = full;
  return t;
}

}  // namespace mtrain::trainer
