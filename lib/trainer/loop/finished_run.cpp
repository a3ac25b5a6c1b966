#include "lib/trainer/loop/finished_run.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::trainer {

std::optional<std::string> finished_run_note(int64_t step, int64_t total, int64_t max_epochs, const std::string& dir,
                                             const config::Resume& resume) {
  if (step < total) return std::nullopt;
  const std::string goal =
      max_epochs > 0 ? fmt::format("{} steps (max_epochs {})", total, max_epochs) : fmt::format("max_steps {}", total);
  if (step == total)
    return fmt::format(
        "already trained: step {} of {} ({}); nothing left to train, so its model is only exported "
        "again (raise --max-steps to train further)",
        step, goal, dir);
  throw UsageError(fmt::format("already trained: step {} of {} — the checkpoint {} is past this run's end, so there "
                               "is nothing to train (--resume {} picked it)",
                               step, goal, dir, config::to_string(resume)),
                   fmt::format("Raise --max-steps above {} to train on from it, or start afresh: a fresh --work-dir, "
                               "or --overwrite without --resume to remove the work dir's checkpoints.",
                               step));
}

}  // namespace mtrain::trainer
