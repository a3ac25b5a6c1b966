#include "mtrain/trainer/loop/train_job.hpp"

#include "mtrain/config/registry.hpp"

namespace mtrain::trainer {

namespace {
// DeepSpeed's "auto" values (the HuggingFace integration's rule), from the model width.
template <class F>
int64_t auto_or(const nlohmann::json& job, const char* key, F rule) {
  const nlohmann::json& v = config::get(job, key);
  if (v.is_string()) return rule();
  return v.get<int64_t>();
}
}  // namespace

TrainJob train_job_from_json(const nlohmann::json& job) {
  using config::get;
  const int64_t embd = get(job, "model.n_embd").get<int64_t>();
  TrainJob t;
  t.strategy = get(job, "strategy").get<std::string>();
  t.strat.bucket_cap_mb = get(job, "ddp.bucket_cap_mb").get<double>();
  t.strat.first_bucket_mb = get(job, "ddp.first_bucket_mb").get<double>();
  t.strat.find_unused_parameters = get(job, "ddp.find_unused_parameters").get<bool>();
  t.strat.grad_clip = get(job, "optim.grad_clip").get<double>();
  t.strat.optim = optim_options_from_job(job);
  ZeroOptions& z = t.strat.zero;
  z.stage = static_cast<int>(get(job, "zero.stage").get<int64_t>());
  z.allgather_bucket_size = get(job, "zero.allgather_bucket_size").get<int64_t>();
  z.reduce_bucket_size = auto_or(job, "zero.reduce_bucket_size", [&] { return embd * embd; });
  if (const auto& ov = get(job, "zero.overlap_comm"); !ov.is_string()) z.overlap_comm = ov.get<bool>();
  z.contiguous_gradients = get(job, "zero.contiguous_gradients").get<bool>();
  z.stage3_prefetch_bucket_size =
      auto_or(job, "zero.stage3_prefetch_bucket_size", [&] { return embd * embd * 9 / 10; });
  z.stage3_param_persistence_threshold =
      auto_or(job, "zero.stage3_param_persistence_threshold", [&] { return 10 * embd; });
  z.stage3_max_live_parameters = get(job, "zero.stage3_max_live_parameters").get<int64_t>();
  z.stage3_max_reuse_distance = get(job, "zero.stage3_max_reuse_distance").get<int64_t>();
  z.offload_optimizer_device = get(job, "zero.offload_optimizer_device").get<std::string>();
  z.offload_param_device = get(job, "zero.offload_param_device").get<std::string>();
  z.stage3_gather_16bit_weights_on_model_save =
      get(job, "zero.stage3_gather_16bit_weights_on_model_save").get<bool>();
  FsdpOptions& f = t.strat.fsdp;
  f.sharding_strategy = get(job, "fsdp.sharding_strategy").get<std::string>();
  f.wrap_policy = get(job, "fsdp.wrap_policy").get<std::string>();
  f.min_num_params = get(job, "fsdp.min_num_params").get<int64_t>();
  f.forward_prefetch = get(job, "fsdp.forward_prefetch").get<bool>();
  f.backward_prefetch = get(job, "fsdp.backward_prefetch").get<std::string>();
  f.limit_all_gathers = get(job, "fsdp.limit_all_gathers").get<bool>();
  f.cpu_offload = get(job, "fsdp.cpu_offload").get<bool>();
  t.strat.precision = get(job, "train.precision").get<std::string>();
  LossScaleOptions& ls = t.strat.loss_scale;
  ls.loss_scale = get(job, "precision.loss_scale").get<double>();
  ls.initial_scale_power = get(job, "precision.initial_scale_power").get<int64_t>();
  ls.loss_scale_window = get(job, "precision.loss_scale_window").get<int64_t>();
  ls.hysteresis = get(job, "precision.hysteresis").get<int64_t>();
  ls.min_loss_scale = get(job, "precision.min_loss_scale").get<double>();
  t.sched = schedule_options_from_job(job);
  t.max_steps = get(job, "train.max_steps").get<int64_t>();
  t.max_epochs = get(job, "train.max_epochs").get<int64_t>();
  t.batch_size = get(job, "train.batch_size").get<int64_t>();
  t.grad_accum = get(job, "train.grad_accum").get<int64_t>();
  t.global_batch_size = get(job, "train.global_batch_size").get<int64_t>();
  t.precision = get(job, "train.precision").get<std::string>();
  t.seed = get(job, "train.seed").get<uint64_t>();
  t.work_dir = get(job, "train.work_dir").get<std::string>();
  t.log_interval = get(job, "train.log_interval").get<int64_t>();
  t.timing_warmup_steps = get(job, "train.timing_warmup_steps").get<int64_t>();
  t.val_interval = get(job, "train.val_interval").get<int64_t>();
  t.val_steps = get(job, "train.val_steps").get<int64_t>();
  t.threads = get(job, "train.threads").get<int64_t>();
  t.shuffle = get(job, "data.shuffle").get<bool>();
  t.drop_last = get(job, "data.drop_last").get<bool>();
  t.checkpoint_interval = get(job, "checkpoint.interval").get<int64_t>();
  t.checkpoint_keep = get(job, "checkpoint.keep").get<int64_t>();
  t.resume = get(job, "checkpoint.resume").get<std::string>();
  t.init = get(job, "model.init").get<std::string>();
  t.init_strict = get(job, "model.init_strict").get<bool>();
  t.settings = job;
  t.comm_timeout_s = get(job, "comm.timeout_s").get<double>();
  t.comm_shared_memory = get(job, "comm.shared_memory").get<bool>();
  return t;
}

}  // namespace mtrain::trainer
