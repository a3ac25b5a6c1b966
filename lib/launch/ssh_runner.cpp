#include "mtrain/launch/ssh_runner.hpp"

#include <signal.h>
#include <unistd.h>

#include <deque>
#include <memory>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"
#include "mtrain/launch/child_group.hpp"
#include "mtrain/launch/exit_status.hpp"

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
};

class SshJob {
 public:
  SshJob(const SshRunOptions& opt, ProcessRunner& runner)
      : opt_(opt), signals_(io_, SIGCHLD, SIGINT, SIGTERM), poll_(io_), group_(io_, signals_, runner, handlers()) {
    signals_.add(SIGHUP);
  }

  ~SshJob() {
    poll_.cancel();
    group_.close();
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
    if (p.child->stdin_fd >= 0 && ::write(p.child->stdin_fd, pre.data(), pre.size()) != static_cast<ssize_t>(pre.size()))
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
    if (!first_failed_) first_failed_ = &p;
    std::string why = exit.code == 255 && !exit.signaled
                          ? fmt::format("ssh to {} failed or the connection was lost (ssh exit 255)", p.label)
                          : fmt::format("the agent on {} (node rank {}) ended with {}", p.label, p.node_rank,
                                        exit.describe());
    if (opt_.abort_job) opt_.abort_job(why);
    if (reason_.empty()) reason_ = why;
    begin_stop();
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
        begin_stop();
      } else if (s.phase == rendezvous::Phase::failed && store_reason_.empty() && !stop_signal_) {
        store_reason_ = s.reason;
        failed_nodes_ = s.failed_nodes;
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

  Proc* agent_of(const std::string& host) {
    for (auto& p : procs_)
      if (p->node_rank >= 0 && p->label == host) return p.get();
    return nullptr;
  }

  int finish() {
    bool failed = stop_signal_ || first_failed_ || !store_reason_.empty();
    if (!failed) {
      for (auto& p : procs_)
        if (p->node_rank >= 0 && (!p->child->exit || !p->child->exit->ok())) failed = true;
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
      out += fmt::format("  node {} (node rank {}): agent {}{}\n", p->label, p->node_rank,
                         p->child->exit ? p->child->exit->describe() : std::string("still running"),
                         p->pgid ? fmt::format(", process group {}", *p->pgid) : std::string());
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
      bool lost = store_reason_.find("stopped sending heartbeats") != std::string::npos;
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
  std::vector<std::string> failed_nodes_;
  int stop_signal_ = 0;
  ChildGroup group_;  // last: its handlers use the members above
};

}  // namespace

int run_over_ssh(const SshRunOptions& opt, ProcessRunner& runner) {
  if (opt.nodes.empty()) throw Error("no hosts to start agents on");
  SshJob job(opt, runner);
  return job.run();
}

}  // namespace mtrain::launch
