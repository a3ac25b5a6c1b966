#pragma once
// An in-memory ProcessRunner: "processes" are scripts that write their output into real pipes
// and end when the script says so or when signalled. Their ends are announced with a real
// SIGCHLD to this process, so the supervisor's event loop is exercised exactly as in production.
#include <signal.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <vector>

#include "lib/launch/process.hpp"

namespace mtrain::testing {

struct FakeScript {
  std::string out, err;
  bool exits_now = true;   // else runs until signalled
  int exit_code = 0;
  bool ignores_term = false;
};

class FakeProcessRunner : public launch::ProcessRunner {
 public:
  std::function<FakeScript(const launch::SpawnRequest&)> script;
  std::vector<launch::SpawnRequest> spawned;
  std::vector<std::pair<pid_t, int>> signals;
  std::map<pid_t, int> stdin_read_fds;  // read ends of children given stdin_pipe, for inspection

  launch::Spawned spawn(const launch::SpawnRequest& req) override {
    spawned.push_back(req);
    FakeScript s = script(req);
    Proc p;
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0) throw std::runtime_error("pipe");
    ::write(out[1], s.out.data(), s.out.size());
    ::write(err[1], s.err.data(), s.err.size());
    p.out_w = out[1];
    p.err_w = err[1];
    p.script = s;
    pid_t pid = next_pid_++;
    procs_[pid] = p;
    launch::Spawned sp{pid, UniqueFd(out[0]), UniqueFd(err[0]), {}};
    if (req.stdin_pipe) {
      int in[2];
      if (pipe(in) != 0) throw std::runtime_error("pipe");
      stdin_read_fds[pid] = in[0];
      sp.stdin_fd.reset(in[1]);
    }
    if (s.exits_now) end(pid, s.exit_code << 8);
    return sp;
  }

  void signal(pid_t pid, int sig) override {
    signals.emplace_back(pid, sig);
    auto& p = procs_.at(pid);
    if (p.ended) return;
    if (sig == SIGKILL || (sig == SIGTERM && !p.script.ignores_term) || sig == SIGINT) end(pid, sig);
  }

  std::vector<launch::Reaped> reap(const std::vector<pid_t>& pids) override {
    std::vector<launch::Reaped> out;
    for (pid_t pid : pids) {
      auto& p = procs_.at(pid);
      if (p.ended && !p.reaped) {
        p.reaped = true;
        out.push_back({pid, p.status});
      }
    }
    return out;
  }

  int signals_sent(int sig) const {
    int n = 0;
    for (const auto& s : signals) n += s.second == sig;
    return n;
  }

 private:
  struct Proc {
    int out_w = -1, err_w = -1;
    FakeScript script;
    bool ended = false, reaped = false;
    int status = 0;
  };
  void end(pid_t pid, int status) {
    auto& p = procs_.at(pid);
    p.ended = true;
    p.status = status;
    close(p.out_w);
    close(p.err_w);
    ::raise(SIGCHLD);
  }
  pid_t next_pid_ = 100000;
  std::map<pid_t, Proc> procs_;
};

}  // namespace mtrain::testing
