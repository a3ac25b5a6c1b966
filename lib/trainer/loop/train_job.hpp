#pragma once
// The trainer's one typed view of a job: built once from the resolved job JSON by
// train_job_from_json (which fills every missing key from the settings registry,
// lib/config/job_settings.cpp + strategy_settings.cpp, and checks every value against it), then
// read everywhere in the trainer. No other trainer code reads job keys.
//
// Each setting is stored once: the ZeRO stage is the strategy's (zero.stage only has to agree
// with it), the precision is strat.precision, shuffle/drop_last are data.*. The struct defaults
// mirror the registry's; tests/unit/trainer/loop/test_train_job.cpp holds them together.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/config/names.hpp"
#include "lib/trainer/data/dataset.hpp"
#include "lib/trainer/model/model.hpp"
#include "lib/trainer/optim/schedule.hpp"
#include "lib/tracking/tracking_options.hpp"
#include "lib/trainer/strategy/strategy.hpp"
#include "lib/config/resume.hpp"

namespace mtrain::trainer {

struct TrainJob {
  config::StrategyName strategy = config::StrategyName::Ddp;
  StrategyOptions strat;  // ddp.*, zero.*, fsdp.*, optim.* (with grad_clip), train.precision, precision.*
  ScheduleOptions sched;  // sched.*, optim.lr
  ModelSpec model;        // model.*, fsdp.wrap_module_types
  DataSpec data;          // data.*, name resolved (auto → text for gpt, else synthetic)
  int64_t max_steps = 200;
  int64_t max_epochs = 0;
  int64_t batch_size = 16;
  int64_t grad_accum = 1;
  int64_t global_batch_size = 0;  // 0: batch_size x grad_accum x world (elastic_resume.hpp)
  bool average_tokens_across_ranks = false;  // the step's loss: the global batch's mean (token_mean.hpp)
  uint64_t seed = 0;
  std::string work_dir = "work_dirs/default";
  int64_t log_interval = 10;
  int64_t timing_warmup_steps = 1;
  int64_t val_interval = 0;
  int64_t val_steps = 10;
  int64_t threads = 0;
  bool cpu_memory_pool = true;  // train.cpu_memory_pool (comm/block_pool.hpp)
  int64_t checkpoint_interval = 0;
  int64_t checkpoint_keep = 2;
  config::Resume resume;  // checkpoint.resume
  bool overwrite = false;   // checkpoint.overwrite: a fresh run removes the work dir's old checkpoints
  std::string init;         // model.init: pretrained weights ("" = none)
  bool init_strict = true;  // model.init_strict
  std::string hf_config;    // model.hf_config: also write <work_dir>/hf/ ("" = no)
  std::optional<std::string> hf_prefix;  // model.hf_prefix (nullopt: auto)
  nlohmann::json settings;  // the resolved job this was made from, every key present (model.safetensors metadata)
  double comm_timeout_s = 300;
  bool comm_shared_memory = true;
  tracking::TrackingOptions tracking;  // log.*: TensorBoard and MLflow (rank 0)

  // 1-3 for zero1-3, else 0.
  int zero_stage() const { return config::zero_stage(strategy); }
  config::Precision precision() const { return strat.precision; }
};

// `job`: a nested job JSON (the launcher's resolved job, or any part of one: missing keys take the
// registry's defaults). Throws mtrain::Error, one paragraph naming `origin` and the key, for an
// unknown key, a value of the wrong type or out of range, or zero.stage disagreeing with strategy.
TrainJob train_job_from_json(const nlohmann::json& job, const std::string& origin = "the job");

}  // namespace mtrain::trainer
