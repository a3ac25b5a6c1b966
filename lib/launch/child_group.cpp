#include "lib/launch/child_group.hpp"

#include <signal.h>
#include <unistd.h>

#include "lib/core/without_throwing.hpp"

namespace asio = boost::asio;

namespace mtrain::launch {

GroupState next_state(GroupState state, GroupEvent event) {
  using S = GroupState;
  const bool alive = state == S::running || state == S::winding_down || state == S::terminating || state == S::killing;
  switch (event) {
    case GroupEvent::wind_down:
      return state == S::running ? S::winding_down : state;
    case GroupEvent::stop:
      return state == S::running || state == S::winding_down ? S::terminating : state;
    case GroupEvent::grace_over:
      return state == S::terminating ? S::killing : state;
    case GroupEvent::all_exited:
      return alive ? S::draining : state;
    case GroupEvent::output_drained:
      return state == S::draining ? S::done : state;
  }
  return state;
}

const char* state_name(GroupState state) {
  switch (state) {
    case GroupState::running: return "running";
    case GroupState::winding_down: return "winding down";
    case GroupState::terminating: return "terminating";
    case GroupState::killing: return "killing";
    case GroupState::draining: return "draining";
    case GroupState::done: return "done";
  }
  return "?";
}

ChildGroup::ChildGroup(asio::io_context& io, asio::signal_set& signals, ProcessRunner& runner,
                       ChildGroupHandlers handlers, std::chrono::milliseconds drain)
    : io_(io), signals_(signals), runner_(runner), h_(std::move(handlers)), drain_period_(drain), deadline_(io),
      drain_(io) {}

// A handler run by close() (a rank's log flushed as its pipe closes) may throw; here that would be
// std::terminate.
ChildGroup::~ChildGroup() {
  without_throwing("closing the ranks' pipes", [this] { close(); });
}

void ChildGroup::close() {
  for (auto& c : children_) {
    for (auto& p : c->pipes)
      if (p && p->is_open()) p->close();
    c->stdin_fd.reset();
  }
  deadline_.cancel();
  drain_.cancel();
  signals_.cancel();
  // Outstanding reads and timers hold references into the group and its owner: let their
  // handlers run (aborted) while everything they touch is still alive.
  io_.restart();
  io_.poll();
}

Child& ChildGroup::spawn(const SpawnRequest& req) {
  Spawned s = runner_.spawn(req);
  auto c = std::make_unique<Child>();
  c->index = children_.size();
  c->pid = s.pid;
  c->stdin_fd = std::move(s.stdin_fd);
  c->started = Child::Clock::now();
  UniqueFd* fds[2] = {&s.stdout_fd, &s.stderr_fd};
  for (int i = 0; i < 2; ++i) {
    if (!*fds[i]) continue;
    // asio owns it from here (its close() and destructor close it).
    c->pipes[i] = std::make_unique<asio::posix::stream_descriptor>(io_, fds[i]->release());
    ++c->open_streams;
    ++open_streams_;
  }
  children_.push_back(std::move(c));
  Child& ref = *children_.back();
  for (int i = 0; i < 2; ++i)
    if (ref.pipes[i]) read(ref, i);
  return ref;
}

void ChildGroup::read(Child& c, int i) {
  c.pipes[i]->async_read_some(asio::buffer(c.buf[i]), [this, &c, i](boost::system::error_code ec, size_t n) {
    const Stream stream = i == 0 ? Stream::Out : Stream::Err;
    if (n > 0 && h_.output) h_.output(c, stream, c.buf[i].data(), n);
    if (!ec) return read(c, i);
    c.pipes[i]->close();
    --c.open_streams;
    --open_streams_;
    if (h_.stream_closed) h_.stream_closed(c, stream);
    if (open_streams_ == 0) apply(GroupEvent::output_drained);  // only once draining
  });
}

void ChildGroup::run() {
  wait_signal();
  reap();
  io_.restart();
  while (!done() && io_.run_one()) {
  }
}

void ChildGroup::wait_signal() {
  signals_.async_wait([this](boost::system::error_code ec, int sig) {
    if (ec) return;
    if (sig == SIGCHLD) {
      reap();
    } else if (h_.signal) {
      h_.signal(sig);
    }
    if (!done()) wait_signal();
  });
}

Child* ChildGroup::find(pid_t pid) {
  // By index: an owner's handler may spawn more children meanwhile (children_ grows).
  for (size_t i = 0; i < children_.size(); ++i)
    if (children_[i]->pid == pid) return children_[i].get();
  return nullptr;
}

void ChildGroup::reap() {
  std::vector<pid_t> live;
  for (auto& c : children_)
    if (!c->exit) live.push_back(c->pid);
  for (const auto& rp : runner_.reap(live)) {
    Child* c = find(rp.pid);
    if (!c || c->exit) continue;
    c->exit = from_wait_status(rp.status);
    c->ended = Child::Clock::now();
    c->ended_wall = std::chrono::system_clock::now();
    c->stdin_fd.reset();  // nobody reads it any more
    if (h_.exited) h_.exited(*c);
  }
  if (!all_exited() || state_ == GroupState::draining || state_ == GroupState::done) return;
  exited_in_ = state_;
  apply(GroupEvent::all_exited);
  deadline_.cancel();
  if (h_.all_exited) h_.all_exited();
  if (open_streams_ == 0) {
    apply(GroupEvent::output_drained);
    return;
  }
  // Give the pipes a moment to deliver the last lines (a grandchild may hold them open).
  drain_.expires_after(drain_period_);
  drain_.async_wait([this](boost::system::error_code ec) {
    if (!ec) apply(GroupEvent::output_drained);
  });
}

void ChildGroup::apply(GroupEvent event) { state_ = next_state(state_, event); }

bool ChildGroup::all_exited() const {
  for (const auto& c : children_)
    if (!c->exit) return false;
  return true;
}

bool ChildGroup::stop_asked() const {
  auto asked = [](GroupState s) { return s == GroupState::terminating || s == GroupState::killing; };
  return asked(state_) || asked(exited_in_);
}

bool ChildGroup::signal(Child& c, int sig) {
  if (c.exit || c.pid <= 0) return false;
  runner_.signal(c.pid, sig);
  return true;
}

void ChildGroup::signal_all(int sig) {
  for (size_t i = 0; i < children_.size(); ++i) signal(*children_[i], sig);
}

bool ChildGroup::stopped(const Child& c) { return !c.exit && c.pid > 0 && runner_.stopped(c.pid); }

void ChildGroup::close_stdin(Child& c) { c.stdin_fd.reset(); }

void ChildGroup::arm_deadline(std::chrono::milliseconds after, GroupEvent on_expiry, std::function<void()> fn) {
  // One timer for the wind-down deadline and the grace periods: arming it again (a stop during
  // a wind-down, the next escalation) replaces what it waited for.
  deadline_.expires_after(after);
  deadline_.async_wait([this, on_expiry, fn = std::move(fn)](boost::system::error_code ec) {
    if (ec) return;
    apply(on_expiry);
    if (fn) fn();
  });
}

bool ChildGroup::wind_down(std::chrono::milliseconds deadline, std::function<void()> on_deadline) {
  if (state_ != GroupState::running) return false;
  apply(GroupEvent::wind_down);
  // On expiry the state stays: the owner decides (usually stop()).
  arm_deadline(deadline, GroupEvent::wind_down, std::move(on_deadline));
  return true;
}

bool ChildGroup::stop(std::chrono::milliseconds grace, std::function<void()> on_grace_over) {
  const GroupState before = state_;
  apply(GroupEvent::stop);
  if (state_ == before) return false;
  arm_deadline(grace, GroupEvent::grace_over, std::move(on_grace_over));
  return true;
}

void ChildGroup::after_grace(std::chrono::milliseconds grace, std::function<void()> fn) {
  if (state_ != GroupState::killing) return;
  arm_deadline(grace, GroupEvent::grace_over, std::move(fn));
}

}  // namespace mtrain::launch
