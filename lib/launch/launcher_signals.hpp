#pragma once
// Signals that must never end the launcher by their default action (issue 17, items 4 and 11).
//
// * SIGPIPE: the launcher's console may go away (`mtrain launch … | head`). The ranks are
//   training: a console write fails with EPIPE instead, and the relay (output.cpp) keeps going.
// * SIGUSR1/SIGUSR2: Slurm's notice before a time limit or preemption may arrive at any moment,
//   also before the supervisor's handlers are installed or after they are removed. Their
//   default action (terminate, exit 138) would end a job that is about to finish with 0.
//
// The life of `mtrain launch`, signal by signal:
// 1. From its first own instruction — a .preinit_array entry of the executable (apps/mtrain),
//    which runs before any library's constructor and long before `main` — `hold_stray_signals`
//    ignores SIGPIPE and *blocks* USR1/USR2: a notice is held pending, not acted on. Threads
//    started later inherit the block. (Only the dynamic loader's own work before that, ~0.1 ms
//    after the exec, is uncovered: no code of a program runs earlier; a parent that sends
//    notices from the moment it starts us must block them for us — the mask survives exec.)
// 2. The supervisor installs its handlers (Boost.Asio signal_set), takes the notices held until
//    then (`take_held_notices`: no rank was running, so there is nobody to pass them on to; it
//    says so) and unblocks them in its thread: from then on a notice is passed on to the ranks.
// 3. Asio restores SIG_DFL when the signal_set goes away: `NoticeSignalsClosing` around that
//    moment blocks them in the calling thread, so that a notice arriving then stays pending
//    until it is ignored, never acted on by default. After the supervisor they are ignored.
//
// Ignored dispositions and the signal mask survive exec, so a child must get the defaults back
// before its exec (`child_default_signals`, async-signal-safe): a rank's `trap … USR1` or
// Python's SIGPIPE handling must work as under any other launcher.
#include <vector>

namespace mtrain::launch {

// SIG_IGN for SIGPIPE; SIGUSR1 and SIGUSR2 blocked in the calling thread (idempotent).
// Async-signal-safe: called from the executable's .preinit_array.
void hold_stray_signals() noexcept;

// The notices (SIGUSR1, SIGUSR2) held pending since `hold_stray_signals`, taken (no longer
// pending), in signal-number order; empty when none arrived.
std::vector<int> take_held_notices();

// Unblocks SIGUSR1/SIGUSR2 in the calling thread (its handlers are installed).
void release_notice_signals();

// Before exec, in a forked child or in place: SIG_DFL for the signals above, and USR1/USR2
// unblocked. Async-signal-safe.
void child_default_signals() noexcept;

// Blocks USR1/USR2 in this thread while a signal_set that handles them is destroyed; on
// destruction ignores them (a pending one is discarded) and unblocks them.
class NoticeSignalsClosing {
 public:
  NoticeSignalsClosing();
  ~NoticeSignalsClosing();
  NoticeSignalsClosing(const NoticeSignalsClosing&) = delete;
  NoticeSignalsClosing& operator=(const NoticeSignalsClosing&) = delete;
};

}  // namespace mtrain::launch
