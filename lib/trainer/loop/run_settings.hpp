#pragma once
// What a run trains, kept in its checkpoints (trainer_state "settings") so that a resume under
// other values says so (issue 45): the model, the data, the length, the seed and the learning
// rate. Not the strategy, the world or the batch split: a resume may change those (resharding).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::trainer {

// The run-defining settings among the job's nested `settings`, those present, by dotted key.
nlohmann::json run_settings(const nlohmann::json& settings);

// The run-defining settings that differ between a checkpoint's trainer state and this run's
// `settings`, as "train.max_steps 50 (now 10)"; none for a checkpoint written before they were kept.
std::vector<std::string> changed_settings(const nlohmann::json& saved_state, const nlohmann::json& settings);

}  // namespace mtrain::trainer
