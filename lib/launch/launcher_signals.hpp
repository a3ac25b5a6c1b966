#pragma once
// Signals that must never end the launcher by their default action (issue 17, items 4 and 11).
//
// * SIGPIPE: the launcher's console may go away (`mtrain launch … | head`). The ranks are
//   training: a console write fails with EPIPE instead, and the relay (output.cpp) keeps going.
// * SIGUSR1/SIGUSR2: Slurm's notice before a time limit or preemption may arrive at any moment,
//   also before the supervisor's handlers are installed or after they are removed. Their
//   default action (terminate, exit 138) would end a job that is about to finish with 0.
//
// The supervisor handles USR1/USR2 while it runs (Boost.Asio signal_set); outside of it they
// are ignored. Asio restores SIG_DFL when a signal_set goes away: `NoticeSignalsClosing` around
// that moment blocks them in the calling thread, so that a notice arriving then stays pending
// until it is ignored, never acted on by default.
//
// Ignored dispositions survive exec, so a child must get the defaults back before its exec
// (`child_default_signals`, async-signal-safe): a rank's `trap … USR1` or Python's SIGPIPE
// handling must work as under any other launcher.
namespace mtrain::launch {

// SIG_IGN for SIGPIPE, SIGUSR1 and SIGUSR2 (idempotent).
void ignore_stray_signals();

// In a forked child before exec: SIG_DFL for the signals above. Async-signal-safe.
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
