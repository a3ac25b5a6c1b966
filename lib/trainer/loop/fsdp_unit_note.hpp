#pragma once
// FSDP over the user's TorchScript model without blocks named in fsdp.wrap_module_types cuts it
// into one unit: every parameter is gathered at once, so sharding saves nothing while the model
// computes. Said once (rank 0's console), with the module classes there are to name (issue 45).
#include <optional>
#include <string>

#include "lib/trainer/loop/train_job.hpp"

namespace mtrain::trainer {

// The note when `job` runs fsdp over a TorchScript `model` that its wrap policy makes one unit.
std::optional<std::string> single_fsdp_unit_note(const TrainJob& job, const TaskModel& model);

}  // namespace mtrain::trainer
