#include "lib/launch/ssh_runner.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/launch/child_group.hpp"
#include "lib/launch/exit_status.hpp"
#include "lib/core/without_throwing.hpp"

namespace asio = boost::asio;

namespace mtrain::launch {

namespace {

constexpr size_t kTailLines = 20;

// What the ssh runner knows of an ssh process besides the process (child_group.hpp).
struct Proc {
  std::string label;            // "worker-1" or "stop worker-1"
  int node_rank = -1;           // -1: a stop command
  Child* child = nullptr;
  std::optional<int> pgid;      // announced by the agent
  std::string partial[2];
  std::deque<std::string> err_tail;
  bool replaced = false;        // lost with restarts: a new agent takes the node's place
};

class SshJob {
 public:
  SshJob(const SshRunOptions& opt, ProcessRunner& runner)
      : opt_(opt), signals_(io_, SIGCHLD, SIGINT, SIGTERM), poll_(io_), group_(io_, signals_, runner, handlers()) {
    signals_.add(SIGHUP);
  }

  ~SshJob() {
    without_throwing("ending the ssh agents", [this] {
      poll_.cancel();
      for (auto& t : respawn_timers_) t->cancel();
      group_.close();
    });
  }

  int run() {
    try {
      for (size_t k = 0; k < opt_.nodes.size(); ++k) start_agent(k);
    } catch (const Error& e) {
      // The agents already started must not be left behind: stop them, then report.
      if (procs_.empty()) throw;
      reason_ = e.message();
      if (opt_.abort_job) opt_.abort_job(reason_);
      first_failed_ = procs_.front().get();
      begin_stop();
    }
    watch_store();
    group_.run();
    return finish();
  }

 private:
  ChildGroupHandlers handlers() {
    ChildGroupHandlers h;
    h.output = [this](Child& c, Stream s, const char* data, size_t n) { relay(*procs_[c.index], s, data, n); };
    h.stream_closed = [this](Child& c, Stream s) { relay_rest(*procs_[c.index], s); };
    h.exited = [this](Child& c) { exited(*procs_[c.index]); };
    h.signal = [this](int sig) { stopped_by(sig); };
    h.all_exited = [this] { poll_.cancel(); };
    return h;
  }

  // An agent's output, a line at a time (announcements are taken out, see line()).
  void relay(Proc& p, Stream stream, const char* data, size_t n) {
    const int i = stream == Stream::Out ? 0 : 1;
    p.partial[i].append(data, n);
    size_t nl;
    while ((nl = p.partial[i].find('\n')) != std::string::npos) {
      line(p, i, p.partial[i].substr(0, nl));
      p.partial[i].erase(0, nl + 1);
    }
  }

  void relay_rest(Proc& p, Stream stream) {
    const int i = stream == Stream::Out ? 0 : 1;
    if (!p.partial[i].empty()) line(p, i, p.partial[i]);
    p.partial[i].clear();
  }

  void stopped_by(int sig) {
    if (!stop_signal_) stop_signal_ = sig;
    std::fprintf(opt_.err, "mtrain: %s: stopping the agent on every node\n", signal_name(sig).c_str());
    if (opt_.abort_job) opt_.abort_job(fmt::format("the launcher was stopped by {}", signal_name(sig)));
    begin_stop();
  }

  void start_agent(size_t k) {
    const SshNode& n = opt_.nodes[k];
    remote::RemoteCommand cmd;
    cmd.job_id = opt_.job_id;
    cmd.workdir = opt_.workdir;
    cmd.env = opt_.env;
    cmd.secret_env = {"MTRAIN_RDZV_TOKEN"};
    remote::Env secrets{{"MTRAIN_RDZV_TOKEN", opt_.token}};
    if (!opt_.job_spec.empty()) {  // the resolved job: on stdin like the token (no argv limit, not in ps)
      cmd.secret_env.push_back("MTRAIN_JOB_SPEC");
      secrets["MTRAIN_JOB_SPEC"] = opt_.job_spec;
    }
    cmd.argv = n.agent_argv;
    remote::SshOptions s = opt_.ssh;
    s.host = n.host;
    s.user = n.user;
    SpawnRequest req;
    req.argv = remote::ssh_argv(s, remote::remote_command_line(cmd));
    req.env = base_env();
    req.stdin_pipe = true;
    auto& p = spawn(req, n.host, static_cast<int>(k));
    std::string pre = remote::stdin_preamble(cmd, secrets);
    if (p.child->stdin_fd &&
        ::write(p.child->stdin_fd.get(), pre.data(), pre.size()) != static_cast<ssize_t>(pre.size()))
      std::fprintf(opt_.err, "mtrain: could not hand the job token to %s's agent\n", n.host.c_str());
  }

  static std::map<std::string, std::string> base_env() {
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return env;
  }

  Proc& spawn(const SpawnRequest& req, const std::string& label, int node_rank) {
    Child& c = group_.spawn(req);
    auto p = std::make_unique<Proc>();
    p->label = label;
    p->node_rank = node_rank;
    p->child = &c;
    procs_.push_back(std::move(p));
    return *procs_.back();
  }

  void line(Proc& p, int stream, const std::string& text) {
    if (stream == 0 && p.node_rank >= 0 && !p.pgid) {
      if (auto pgid = remote::parse_announcement(text, opt_.job_id)) {
        p.pgid = pgid;
        return;
      }
    }
    if (p.node_rank < 0) {  // a stop command: only its complaints are worth showing
      // "No such process": the agent had already gone (its stdin closed first) — the goal.
      if (text.find("No such process") == std::string::npos)
        std::fprintf(opt_.err, "mtrain: %s: %s\n", p.label.c_str(), text.c_str());
      return;
    }
    if (stream == 1) {
      p.err_tail.push_back(text);
      if (p.err_tail.size() > kTailLines) p.err_tail.pop_front();
    }
    std::FILE* f = stream == 0 ? opt_.out : opt_.err;
    std::fprintf(f, "%s\n", text.c_str());
    std::fflush(f);
  }

  void exited(Proc& p) {
    const ExitStatus& exit = *p.child->exit;
    if (p.node_rank < 0 || exit.ok() || group_.stop_asked()) return;
    std::string why = exit.code == 255 && !exit.signaled
                          ? fmt::format("ssh to {} failed or the connection was lost (ssh exit 255)", p.label)
                          : fmt::format("the agent on {} (node rank {}) ended with {}", p.label, p.node_rank,
                                        exit.describe());
    if (opt_.restarts && lost_with_restarts(p, why)) return;
    if (!first_failed_) first_failed_ = &p;
    if (opt_.abort_job) opt_.abort_job(why);
    if (reason_.empty()) reason_ = why;
    begin_stop();
  }

  // With restarts, an agent that ended badly is a lost node while the store's job lives: the
  // store re-forms without it and a new agent is started there. False when the job is over
  // for the store (failed: the usual teardown follows with the store's reason).
  bool lost_with_restarts(Proc& p, const std::string& why) {
    using rendezvous::Phase;
    auto phase = [this] { return opt_.job_status ? opt_.job_status().phase : Phase::running; };
    if (phase() == Phase::finished) {  // a late agent of a job that ended without it
      p.replaced = true;
      return true;
    }
    if (phase() == Phase::failed) return false;
    if (opt_.lose_node) opt_.lose_node(p.label, why);
    if (phase() == Phase::failed) return false;  // no restart left, or fewer than MIN nodes
    p.replaced = true;
    // The old agent's process group, if it was announced and the host still answers (ssh died,
    // the agent did not): its stdin is gone, so it tears down by itself; this makes sure. Never
    // the pgid record, which the new agent on that host overwrites.
    if (p.pgid) stop_agent(p, "TERM");
    const size_t k = static_cast<size_t>(p.node_rank);
    if (streak_.size() < opt_.nodes.size()) streak_.resize(opt_.nodes.size(), 0);
    const auto ran = std::chrono::duration_cast<std::chrono::milliseconds>(*p.child->ended - p.child->started);
    streak_[k] = next_streak(streak_[k], ran, opt_.respawn);
    const auto delay = restart_delay(streak_[k], opt_.respawn);
    std::fprintf(opt_.err, "mtrain: node %s lost (%s); the job goes on without it; a new agent starts there in %.1f s\n",
                 p.label.c_str(), why.c_str(), std::chrono::duration<double>(delay).count());
    std::fflush(opt_.err);
    respawn_after(k, delay);
    return true;
  }

  void respawn_after(size_t k, std::chrono::milliseconds delay) {
    auto timer = std::make_unique<asio::steady_timer>(io_);
    timer->expires_after(delay);
    timer->async_wait([this, k](boost::system::error_code ec) {
      if (ec || group_.stop_asked() || group_.all_exited()) return;
      if (opt_.job_status) {
        auto phase = opt_.job_status().phase;
        if (phase == rendezvous::Phase::finished || phase == rendezvous::Phase::failed) return;
      }
      try {
        start_agent(k);
      } catch (const Error& e) {  // ssh itself could not start: try again later
        std::fprintf(opt_.err, "mtrain: could not start a new agent on %s: %s\n", opt_.nodes[k].host.c_str(),
                     e.message().c_str());
        streak_[k] += 1;
        respawn_after(k, restart_delay(streak_[k], opt_.respawn));
      }
    });
    respawn_timers_.push_back(std::move(timer));
  }

  void watch_store() {
    if (!opt_.job_status) return;
    poll_.expires_after(opt_.poll);
    poll_.async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      auto s = opt_.job_status();
      if (s.phase == rendezvous::Phase::failed && !group_.stop_asked()) {
        store_reason_ = s.reason;
        failed_nodes_ = s.failed_nodes;
        lost_nodes_ = s.lost;
        begin_stop();
      } else if (s.phase == rendezvous::Phase::failed && store_reason_.empty() && !stop_signal_) {
        store_reason_ = s.reason;
        failed_nodes_ = s.failed_nodes;
        lost_nodes_ = s.lost;
      }
      if (!group_.all_exited()) watch_store();
    });
  }

  void stop_agent(Proc& p, const std::string& signal) {
    remote::SshOptions s = opt_.ssh;
    const SshNode& n = opt_.nodes.at(static_cast<size_t>(p.node_rank));
    s.host = n.host;
    s.user = n.user;
    std::string cmd = p.pgid ? remote::stop_command_line(*p.pgid, signal)
                             : remote::stop_recorded_command_line(opt_.job_id, n.host, signal);
    SpawnRequest req;
    req.argv = remote::ssh_argv(s, cmd);
    req.env = base_env();
    try {
      spawn(req, "stopping the agent on " + n.host, -1);
    } catch (const Error& e) {
      std::fprintf(opt_.err, "mtrain: could not run ssh to stop %s: %s\n", n.host.c_str(), e.message().c_str());
    }
  }

  // Once: EOF on every agent's stdin and a remote TERM to its process group now; KILL (remote,
  // and the local ssh) after the grace period.
  void begin_stop() {
    std::vector<Proc*> agents;
    for (auto& p : procs_)
      if (p->node_rank >= 0) agents.push_back(p.get());
    const bool first = group_.stop(opt_.grace, [this, agents] {
      for (Proc* p : agents)
        if (!p->child->exit) {
          stop_agent(*p, "KILL");
          group_.signal(*p->child, SIGKILL);  // the local ssh; the remote side sees the connection close
        }
      // Stop commands that hang (an unreachable host) end after one more grace period.
      group_.after_grace(opt_.grace, [this] { group_.signal_all(SIGKILL); });
    });
    if (!first) return;
    for (Proc* p : agents) {
      group_.close_stdin(*p->child);  // EOF: the agent tears its ranks down
      if (!p->child->exit) stop_agent(*p, "TERM");
    }
  }

  Proc* agent_of(const std::string& host) {  // the newest agent of that host
    for (auto it = procs_.rbegin(); it != procs_.rend(); ++it)
      if ((*it)->node_rank >= 0 && (*it)->label == host) return it->get();
    return nullptr;
  }

  int finish() {
    bool failed = stop_signal_ || first_failed_ || !store_reason_.empty();
    if (!failed) {
      for (auto& p : procs_)
        if (p->node_rank >= 0 && !p->replaced && (!p->child->exit || !p->child->exit->ok())) failed = true;
      if (!failed) return 0;
    }
    // The node to blame: the store's (it saw heartbeats stop or got the report), else the first
    // agent that ended badly.
    Proc* root = nullptr;
    if (!failed_nodes_.empty()) root = agent_of(failed_nodes_.front());
    if (!root) root = first_failed_;
    std::string reason = !store_reason_.empty() ? store_reason_ : reason_;
    if (stop_signal_) reason = fmt::format("stopped by {}", signal_name(stop_signal_));
    std::string out = fmt::format("mtrain: job {} failed: {}\n", opt_.job_id, reason);
    for (auto& p : procs_) {
      if (p->node_rank < 0) continue;
      out += fmt::format("  node {} (node rank {}): agent {}{}{}\n", p->label, p->node_rank,
                         p->child->exit ? p->child->exit->describe() : std::string("still running"),
                         p->pgid ? fmt::format(", process group {}", *p->pgid) : std::string(),
                         p->replaced ? " (lost; replaced)" : "");
    }
    if (root && !root->err_tail.empty()) {
      out += fmt::format("  last lines from {}:\n", root->label);
      for (const auto& l : root->err_tail) out += "    " + l + "\n";
    }
    std::fwrite(out.data(), 1, out.size(), opt_.err);
    std::fflush(opt_.err);
    if (stop_signal_) return 128 + stop_signal_;
    // A node lost (heartbeats stopped, ssh failed) is 1; a rank's failure keeps its code.
    if (root && root->child->exit) {
      const ExitStatus& e = *root->child->exit;
      bool lost = store_reason_.find("stopped sending heartbeats") != std::string::npos ||
                  std::find(lost_nodes_.begin(), lost_nodes_.end(), root->label) != lost_nodes_.end() ||
                  std::any_of(procs_.begin(), procs_.end(),
                              [&](const auto& q) { return q->replaced && q->label == root->label; });
      if (!e.ok() && !(e.code == 255 && !e.signaled) && !lost) return e.launcher_code();
    }
    return kExitFailure;
  }

  const SshRunOptions& opt_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::steady_timer poll_;
  std::vector<std::unique_ptr<Proc>> procs_;
  Proc* first_failed_ = nullptr;
  std::string reason_, store_reason_;
  std::vector<std::string> failed_nodes_, lost_nodes_;
  int stop_signal_ = 0;
  std::vector<int> streak_;  // per node: quick losses in a row (the respawn back-off)
  std::vector<std::unique_ptr<asio::steady_timer>> respawn_timers_;
  ChildGroup group_;  // last: its handlers use the members above
};

}  // namespace

int run_over_ssh(const SshRunOptions& opt, ProcessRunner& runner) {
  if (opt.nodes.empty()) throw RuntimeFailure("no hosts to start agents on");
  SshJob job(opt, runner);
  return job.run();
}

}  // namespace mtrain::launch
