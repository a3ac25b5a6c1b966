#pragma once
// A resumed checkpoint at or past this run's last step: nothing is trained. At the last step (the
// same command run again) the model is exported again and that is said; past it (another run's
// checkpoint, or max_steps lowered) the run is refused: exporting would pass off a model trained
// for more steps than asked (issue 45: "Iter(val) [50/10]", exit 0).
#include <cstdint>
#include <optional>
#include <string>

#include "lib/config/resume.hpp"

namespace mtrain::trainer {

// After resuming `dir` at `step` of `total` (`max_epochs` > 0: the run counts epochs): none
// while steps are left; the line to print at the last step; a UsageError past it.
std::optional<std::string> finished_run_note(int64_t step, int64_t total, int64_t max_epochs, const std::string& dir,
                                             const config::Resume& resume);

}  // namespace mtrain::trainer
