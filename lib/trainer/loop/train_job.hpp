#pragma once
// The loop's view of a resolved job (lib/config/job_settings.cpp is the authority on keys and
// defaults; the struct defaults mirror it and a unit test holds them together).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "mtrain/trainer/optim/schedule.hpp"
#include "mtrain/trainer/strategy/strategy.hpp"

namespace mtrain::trainer {

struct TrainJob {
  std::string strategy = "ddp";
  StrategyOptions strat;
  ScheduleOptions sched;
  int64_t max_steps = 200;
  int64_t max_epochs = 0;
  int64_t batch_size = 16;
  int64_t grad_accum = 1;
  int64_t global_batch_size = 0;  // 0: batch_size x grad_accum x world (elastic_resume.hpp)
  std::string precision = "fp32";
  uint64_t seed = 0;
  std::string work_dir = "work_dirs/default";
  int64_t log_interval = 10;
  int64_t timing_warmup_steps = 1;
  int64_t val_interval = 0;
  int64_t val_steps = 10;
  int64_t threads = 0;
  bool shuffle = true;
  bool drop_last = true;
  int64_t checkpoint_interval = 0;
  int64_t checkpoint_keep = 2;
  std::string resume;
  std::string init;         // model.init: pretrained weights ("" = none)
  bool init_strict = true;  // model.init_strict
  nlohmann::json settings;  // the resolved job this was made from (model.safetensors metadata)
  double comm_timeout_s = 300;
  bool comm_shared_memory = true;
};

TrainJob train_job_from_json(const nlohmann::json& job);

}  // namespace mtrain::trainer
