#pragma once
// A group of child processes on one Boost.Asio event loop: the one child-process loop of the
// launcher, under both the local supervisor (the ranks of an attempt) and the ssh runner (one
// ssh per node agent, plus the ssh commands that stop them).
//
//   * spawn: through a ProcessRunner (its own process group, the guardian); stdout and stderr
//     are read asynchronously and handed to the owner as they come.
//   * signals: SIGCHLD wakes the loop to reap (no polling); every other signal of the set goes
//     to the owner. A child is signalled only until it is reaped: its pid may be someone
//     else's afterwards.
//   * teardown: stop() asks once and arms the grace timer; when it expires the owner escalates
//     (SIGKILL, a remote kill); wind_down() lets the children end on their own by a deadline.
//   * the end: once every child is reaped the pipes get a moment (drain) to deliver their last
//     lines, since a grandchild may hold them open; then the loop ends.
//
// The group's state is one value that only moves forward (next_state, pure):
//
//   running ──wind_down──▶ winding_down ──stop──▶ terminating ──grace_over──▶ killing
//      └──────────────────────stop──────────────────────▲
//   running, winding_down, terminating, killing ──all_exited──▶ draining ──output_drained──▶ done
#include <sys/types.h>

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "lib/launch/exit_status.hpp"
#include "lib/core/unique_fd.hpp"
#include "lib/launch/output.hpp"
#include "lib/launch/process.hpp"

namespace mtrain::launch {

enum class GroupState {
  running,       // children run; nobody asked them to stop
  winding_down,  // told to end on their own (a notice) by a deadline
  terminating,   // a stop was asked (a signal, a failure): the grace period runs
  killing,       // the grace period is over: the owner escalates
  draining,      // every child reaped; the pipes may still hold their last lines
  done,          // every pipe at end of file, or the drain period over: the loop ends
};

enum class GroupEvent { wind_down, stop, grace_over, all_exited, output_drained };

// The state after `event`; an event that does not apply in `state` leaves it as it is.
GroupState next_state(GroupState state, GroupEvent event);
const char* state_name(GroupState state);

// One child of the group. The owner keeps what the child is (a rank, an agent) in its own table
// at `index`.
struct Child {
  using Clock = std::chrono::steady_clock;
  size_t index = 0;  // spawn order in the group
  pid_t pid = -1;
  UniqueFd stdin_fd;  // the write end when stdin_pipe was asked for; closed once reaped
  Clock::time_point started;
  std::optional<ExitStatus> exit;  // set when reaped
  std::optional<Clock::time_point> ended;
  std::chrono::system_clock::time_point ended_wall;  // to compare with files' times
  int open_streams = 0;  // stdout/stderr pipes not at end of file yet

 private:
  friend class ChildGroup;
  std::array<std::unique_ptr<boost::asio::posix::stream_descriptor>, 2> pipes;
  std::array<std::array<char, 8192>, 2> buf{};
};

// What the owner hears. Each may be empty.
struct ChildGroupHandlers {
  std::function<void(Child&, Stream, const char* data, size_t size)> output;
  std::function<void(Child&, Stream)> stream_closed;  // end of file (or the group closing)
  std::function<void(Child&)> exited;                  // just reaped: child.exit is set
  std::function<void(int sig)> signal;                 // a signal of the set other than SIGCHLD
  std::function<void()> all_exited;                    // once, when the last child is reaped
};

class ChildGroup {
 public:
  static constexpr std::chrono::milliseconds kDrain{1500};

  // `signals` must hold SIGCHLD and be installed before the first spawn (no exit is missed).
  ChildGroup(boost::asio::io_context& io, boost::asio::signal_set& signals, ProcessRunner& runner,
             ChildGroupHandlers handlers, std::chrono::milliseconds drain = kDrain);
  ~ChildGroup();  // close()
  ChildGroup(const ChildGroup&) = delete;
  ChildGroup& operator=(const ChildGroup&) = delete;

  // Starts a child and relays its output. Throws what the runner throws (nothing is added then).
  Child& spawn(const SpawnRequest& req);

  // Runs the event loop until the group is done: waits for signals, reaps once at the start (a
  // child may have exited before the first SIGCHLD was waited for), then handles events.
  void run();

  // Signals a child's process group; false (nothing sent) once it was reaped.
  bool signal(Child& child, int sig);
  void signal_all(int sig);  // every child not reaped yet
  bool stopped(const Child& child);  // SIGSTOP/SIGTSTP; false once reaped
  void close_stdin(Child& child);    // EOF on its stdin

  // running → winding_down: on_deadline runs when `deadline` has passed (not once every child
  // was reaped, nor once a stop was asked). False when not running.
  bool wind_down(std::chrono::milliseconds deadline, std::function<void()> on_deadline);
  // running/winding_down → terminating: on_grace_over runs after `grace` (state killing then).
  // False when a stop was asked already or every child was reaped (nothing to do).
  bool stop(std::chrono::milliseconds grace, std::function<void()> on_grace_over);
  // In killing: one more stage, `fn` after `grace` (an escalation that may itself hang).
  void after_grace(std::chrono::milliseconds grace, std::function<void()> fn);

  GroupState state() const { return state_; }
  // Whether a stop was asked: terminating or killing now, or when the last child was reaped.
  bool stop_asked() const;
  bool all_exited() const;
  bool done() const { return state_ == GroupState::done; }
  const std::vector<std::unique_ptr<Child>>& children() const { return children_; }

  // Closes every pipe and stdin, cancels the timers and the signal wait, and lets the aborted
  // handlers run (the owner's must still be alive). Call it before what the handlers touch goes.
  void close();

 private:
  void read(Child& child, int stream);
  void wait_signal();
  void reap();
  void apply(GroupEvent event);
  void arm_deadline(std::chrono::milliseconds after, GroupEvent on_expiry, std::function<void()> fn);
  Child* find(pid_t pid);

  boost::asio::io_context& io_;
  boost::asio::signal_set& signals_;
  ProcessRunner& runner_;
  ChildGroupHandlers h_;
  std::chrono::milliseconds drain_period_;
  boost::asio::steady_timer deadline_, drain_;
  std::vector<std::unique_ptr<Child>> children_;
  GroupState state_ = GroupState::running;
  GroupState exited_in_ = GroupState::running;  // the state the last child was reaped in
  int open_streams_ = 0;                        // over every child
};

}  // namespace mtrain::launch
