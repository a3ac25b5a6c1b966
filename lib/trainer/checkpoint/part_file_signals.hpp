#pragma once
// A part file that outlives its writer's death by signal: `mtrain checkpoint consolidate`
// killed by Ctrl-C, SIGTERM, a closed terminal (SIGHUP) or a closed pipe used to leave
// <dest>.part behind (as large as the model). While a RemovePartOnSignal lives and is armed,
// the fatal signals a user or a scheduler sends remove the file and then end the process with
// that same signal (the default action, re-raised), so the exit status is unchanged. Those
// signals are held from construction until arm(), so one that arrives while the file is being
// created is handled once the path is known, not lost with the file left behind. SIGKILL cannot
// be caught: its leftover is a regular file of ours, which the next write replaces
// (create_part_file). Only for short single-threaded tools: the training worker has its own
// preemption handlers (lib/trainer/loop/preemption.cpp).
#include <string>

namespace mtrain::trainer {

class RemovePartOnSignal {
 public:
  RemovePartOnSignal();   // installs the handlers, holds the signals
  ~RemovePartOnSignal();  // restores the previous handlers and signal mask
  // From now on a signal removes `part`; releases the signals held meanwhile.
  void arm(const std::string& part);
  RemovePartOnSignal(const RemovePartOnSignal&) = delete;
  RemovePartOnSignal& operator=(const RemovePartOnSignal&) = delete;
};

}  // namespace mtrain::trainer
