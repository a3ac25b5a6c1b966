#pragma once
// What a checkpoint keeps of the run that wrote it: its trainer state (the position, the
// sampler's order, the RNG's place, the last loss) and the settings that say what the run trains,
// so that a resume under other values says so (issue 45): the model, the data, the length, the
// seed and the learning rate. Not the strategy, the world or the batch split: a resume may change
// those (resharding).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/trainer/loop/train_job.hpp"

namespace mtrain::trainer {

// The run-defining settings among the job's nested `settings`, those present, by dotted key.
nlohmann::json run_settings(const nlohmann::json& settings);

// The run-defining settings that differ between a checkpoint's trainer state and this run's
// `settings`, as "train.max_steps 50 (now 10)"; none for a checkpoint written before they were kept.
std::vector<std::string> changed_settings(const nlohmann::json& saved_state, const nlohmann::json& settings);

// Where the loop stands when it saves.
struct TrainerPosition {
  int64_t step = 0, total = 0, steps_per_epoch = 1;
  double last_loss = 0;
};

// The checkpoint's trainer state (manifest "state"), its "settings" from run_settings.
nlohmann::json trainer_state(const TrainJob& job, const TrainerPosition& at);

}  // namespace mtrain::trainer
