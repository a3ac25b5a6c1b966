#include "mtrain/trainer/loop/train_job.hpp"

#include "mtrain/config/registry.hpp"

namespace mtrain::trainer {

TrainJob train_job_from_json(const nlohmann::json& job) {
  using config::get;
  TrainJob t;
  t.strategy = get(job, "strategy").get<std::string>();
  t.strat.bucket_cap_mb = get(job, "ddp.bucket_cap_mb").get<double>();
  t.strat.first_bucket_mb = get(job, "ddp.first_bucket_mb").get<double>();
  t.strat.find_unused_parameters = get(job, "ddp.find_unused_parameters").get<bool>();
  t.strat.grad_clip = get(job, "optim.grad_clip").get<double>();
  t.strat.optim = optim_options_from_job(job);
  t.sched = schedule_options_from_job(job);
  t.max_steps = get(job, "train.max_steps").get<int64_t>();
  t.max_epochs = get(job, "train.max_epochs").get<int64_t>();
  t.batch_size = get(job, "train.batch_size").get<int64_t>();
  t.grad_accum = get(job, "train.grad_accum").get<int64_t>();
  t.precision = get(job, "train.precision").get<std::string>();
  t.seed = get(job, "train.seed").get<uint64_t>();
  t.work_dir = get(job, "train.work_dir").get<std::string>();
  t.log_interval = get(job, "train.log_interval").get<int64_t>();
  t.val_interval = get(job, "train.val_interval").get<int64_t>();
  t.val_steps = get(job, "train.val_steps").get<int64_t>();
  t.threads = get(job, "train.threads").get<int64_t>();
  t.shuffle = get(job, "data.shuffle").get<bool>();
  t.drop_last = get(job, "data.drop_last").get<bool>();
  t.checkpoint_interval = get(job, "checkpoint.interval").get<int64_t>();
  t.checkpoint_keep = get(job, "checkpoint.keep").get<int64_t>();
  t.resume = get(job, "checkpoint.resume").get<std::string>();
  t.comm_timeout_s = get(job, "comm.timeout_s").get<double>();
  return t;
}

}  // namespace mtrain::trainer
