#include "lib/launch/supervisor.hpp"

#include "lib/core/unique_fd.hpp"

#include <fcntl.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include "lib/launch/child_group.hpp"
#include "lib/launch/exit_status.hpp"
#include "lib/launch/launcher_signals.hpp"
#include "lib/launch/progress_watch.hpp"
#include "lib/launch/report.hpp"
#include "lib/launch/tracked_run.hpp"
#include "lib/core/without_throwing.hpp"

namespace asio = boost::asio;

namespace mtrain::launch {

namespace {

using Clock = std::chrono::steady_clock;

// What the supervisor knows of a rank besides its process (child_group.hpp).
struct RankRun {
  const plan::Worker* worker = nullptr;
  std::string host;
  Child* child = nullptr;
  std::optional<Clock::time_point> stopped_since;  // seen stopped (SIGSTOP) since then
  bool stopped_by_us = false;  // signalled during teardown
  std::string heartbeat_file;  // MTRAIN_HEARTBEAT_FILE of this attempt, if watched
  std::unique_ptr<RankOutput> output;
};

class Attempt {
 public:
  Attempt(const plan::LaunchPlan& plan, ProcessRunner& runner, const SuperviseOptions& opt, int attempt,
          asio::io_context& io, asio::signal_set& signals)
      : plan_(plan), opt_(opt), attempt_(attempt), io_(io), progress_timer_(io), stopped_timer_(io),
        group_(io, signals, runner, handlers()) {}

  // Outstanding reads and timers hold references into this attempt: cancel them and let their
  // handlers run while everything they touch is still alive.
  ~Attempt() {
    without_throwing("ending the attempt", [this] {
      progress_timer_.cancel();
      stopped_timer_.cancel();
      for (auto* w : opt_.watchers) w->finish();
      group_.close();
    });
  }

  // Runs the attempt to the end; returns the failure (empty on success).
  std::optional<Failure> run(int& stop_signal, int& notice_signal) {
    oom_before_ = oom_kill_count();
    spawn_all();
    start_watchers();
    group_.run();
    stop_signal = stop_signal_;
    notice_signal = notice_signal_;
    return failure();
  }

 private:
  ChildGroupHandlers handlers() {
    ChildGroupHandlers h;
    h.output = [this](Child& c, Stream s, const char* data, size_t n) { relay(*ranks_[c.index], s, data, n); };
    h.stream_closed = [this](Child& c, Stream) {
      if (c.open_streams == 0) ranks_[c.index]->output->finish();
    };
    h.exited = [this](Child& c) { rank_exited(*ranks_[c.index]); };
    h.signal = [this](int sig) { on_signal(sig); };
    h.all_exited = [this] { progress_timer_.cancel(); };
    return h;
  }

  void relay(RankRun& r, Stream stream, const char* data, size_t n) {
    r.output->feed(stream, data, n);
    if (progress_) progress_->output(r.worker->rank);
  }

  void spawn_all() {
    for (const auto& node : plan_.nodes) {
      for (const auto& w : node.workers) {
        auto r = std::make_unique<RankRun>();
        r->worker = &w;
        r->host = node.host;
        r->output = std::make_unique<RankOutput>(opt_.output, node.host, w.rank, w.local_rank,
                                                 w.env.count("ROLE_NAME") ? w.env.at("ROLE_NAME") : "default",
                                                 attempt_);
        SpawnRequest req;
        req.argv = w.argv;
        if (!opt_.program_path.empty()) req.argv[0] = opt_.program_path;
        req.env = opt_.base_env;
        for (const auto& [k, v] : plan::attempt_env(w, attempt_, opt_.error_file_dir)) req.env[k] = v;
        if (req.env.count("TORCHELASTIC_ERROR_FILE")) prepare_error_file(req.env.at("TORCHELASTIC_ERROR_FILE"));
        if (req.env.count("MTRAIN_HEARTBEAT_FILE")) {
          r->heartbeat_file = req.env.at("MTRAIN_HEARTBEAT_FILE");
          prepare_error_file(r->heartbeat_file);
          // Exists from the start and the rank only touches it; explicit mode, whatever the umask
          // (no file of a job is world-writable, docs/reliability.md).
          const UniqueFd fd(::open(r->heartbeat_file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640));
          if (fd && ::fchmod(fd.get(), 0640) != 0) {
            // Not fatal: the watch reads the mtime only.
          }
        }
        try {
          r->child = &group_.spawn(req);
        } catch (...) {
          kill_all(SIGKILL);
          throw;
        }
        ranks_.push_back(std::move(r));
      }
    }
  }

  static void prepare_error_file(const std::string& path) {
    auto slash = path.rfind('/');
    if (slash != std::string::npos) {
      std::error_code ec;
      std::filesystem::create_directories(path.substr(0, slash), ec);
    }
    ::unlink(path.c_str());
  }

  void on_signal(int sig) {
    if (sig == SIGUSR1 || sig == SIGUSR2) {
      // A notice (Slurm sends USR1 before the time limit or a preemption): the ranks wind down
      // on their own — the bundled trainer saves a checkpoint — so from now on a rank that
      // exits does not tear the others down at once; they get `notice_grace` to finish.
      if (!notice_signal_) notice_signal_ = sig;
      group_.signal_all(sig);
    } else {
      // SIGINT/SIGTERM/SIGHUP: pass it on, stop for good, and escalate after the grace period.
      if (!stop_signal_) stop_signal_ = sig;
      begin_teardown(sig);
    }
  }

  void rank_exited(RankRun& r) {
    ExitStatus& exit = *r.child->exit;
    if (progress_) progress_->finished(r.worker->rank);
    if (exit.signaled && exit.code == SIGKILL && oom_before_ >= 0 && oom_kill_count() > oom_before_) exit.oom = true;
    if (!exit.ok() && !root_ && !stop_signal_ && !r.stopped_by_us && !external_) {
      root_ = &r;
      for (auto* w : opt_.watchers)
        w->rank_failed(fmt::format("rank {} (local rank {}, pid {}) on {}: {}", r.worker->rank, r.worker->local_rank,
                                   r.child->pid, r.host, exit.describe()));
      if (notice_signal_) {
        wind_down();
      } else {
        begin_teardown(SIGTERM);
      }
    } else if (notice_signal_ && !stop_signal_) {
      wind_down();
    }
  }

  // After a notice, the first rank to end starts the clock for the rest; whoever is still
  // running when it expires is torn down as usual (SIGTERM, then SIGKILL after the grace period).
  void wind_down() {
    group_.wind_down(opt_.notice_grace, [this] {
      if (!group_.all_exited()) begin_teardown(SIGTERM);
    });
  }

  void begin_teardown(int sig) {
    for (auto& r : ranks_) {
      if (r->child->exit) continue;
      r->stopped_by_us = true;
      group_.signal(*r->child, sig);
      // A stopped rank gets the signal only once it runs again.
      if (group_.stopped(*r->child)) group_.signal(*r->child, SIGCONT);
    }
    group_.stop(opt_.grace_period, [this] { kill_all(SIGKILL); });
  }

  void kill_all(int sig) {
    for (auto& r : ranks_)
      if (!r->child->exit) r->stopped_by_us = true;
    group_.signal_all(sig);
  }

  void start_watchers() {
    if (opt_.stopped_timeout.count() > 0) watch_stopped();
    for (auto* w : opt_.watchers)
      w->start(io_, [this](ExternalStop s) {
        if (external_ || root_ || stop_signal_ || group_.all_exited()) return;
        const int notice = s.notice_signal;
        external_ = std::move(s);
        if (!notice) return begin_teardown(SIGTERM);
        notice_signal_ = notice;  // as a notice to the launcher: rank exits from now on are expected
        group_.signal_all(notice);
        wind_down();
      });
    const bool given = opt_.heartbeat_timeout_s > 0;
    if (!given && opt_.default_heartbeat_floor.count() <= 0) return;
    progress_ = std::make_unique<ProgressWatch>(
        given ? std::chrono::milliseconds(static_cast<long>(opt_.heartbeat_timeout_s * 1000)) : opt_.default_heartbeat_floor,
        rendezvous::real_clock(), AdaptiveWatch{!given, 20});
    for (auto& r : ranks_) {
      progress_->add(r->worker->rank, r->child->pid, r->host);
      if (!r->heartbeat_file.empty()) progress_->heartbeat(r->worker->rank, file_stamp(r->heartbeat_file));
    }
    watch_progress();
  }

  // Look at the heartbeat files a few times per timeout (at least once a second).
  void watch_progress() {
    auto period = std::min<std::chrono::milliseconds>(std::chrono::milliseconds(1000), progress_->timeout() / 4);
    progress_timer_.expires_after(std::max(period, std::chrono::milliseconds(10)));
    progress_timer_.async_wait([this](boost::system::error_code ec) {
      if (ec || group_.all_exited()) return;
      for (auto& r : ranks_)
        if (!r->child->exit && !r->heartbeat_file.empty()) progress_->heartbeat(r->worker->rank, file_stamp(r->heartbeat_file));
      if (!root_ && !stop_signal_ && !external_) {
        if (auto stall = progress_->check()) {
          for (auto& r : ranks_)
            if (r->worker->rank == stall->rank) root_ = r.get();
          stall_ = stall->describe();
          std::fprintf(stderr, "mtrain: %s; stopping the job\n", stall_.c_str());
          for (auto* w : opt_.watchers) w->rank_failed(stall_);
          begin_teardown(SIGTERM);
          return;
        }
      }
      watch_progress();
    });
  }

  // A rank stopped by SIGSTOP/SIGTSTP (a stray `kill -STOP`, job control, a frozen node's
  // cgroup) makes no progress and its peers wait for it in a collective until their comm
  // timeout, then the first of them to give up would look like the root cause. Checked once a
  // second (more often for a short timeout); the stopped rank is named.
  void watch_stopped() {
    auto period = std::min<std::chrono::milliseconds>(std::chrono::milliseconds(1000), opt_.stopped_timeout / 4);
    stopped_timer_.expires_after(std::max(period, std::chrono::milliseconds(10)));
    stopped_timer_.async_wait([this](boost::system::error_code ec) {
      if (ec || group_.all_exited()) return;
      auto now = Clock::now();
      for (auto& r : ranks_) {
        if (r->child->exit) continue;
        if (!group_.stopped(*r->child)) {
          r->stopped_since.reset();
          continue;
        }
        if (!r->stopped_since) r->stopped_since = now;
        if (root_ || stop_signal_ || external_ || group_.stop_asked() || now - *r->stopped_since < opt_.stopped_timeout)
          continue;
        root_ = r.get();
        stall_ = fmt::format("rank {} (pid {}) on {} has been stopped (SIGSTOP or job control) for {:.0f} s; its peers "
                             "cannot go on without it",
                             r->worker->rank, r->child->pid, r->host,
                             std::chrono::duration<double>(now - *r->stopped_since).count());
        std::fprintf(stderr, "mtrain: %s; stopping the job\n", stall_.c_str());
        for (auto* w : opt_.watchers) w->rank_failed(stall_);
        begin_teardown(SIGTERM);
        return;
      }
      watch_stopped();
    });
  }

  std::optional<Failure> failure() {
    for (auto& r : ranks_) r->output->finish();
    if (external_) {
      Failure f;
      f.external = true;
      f.cause = external_->reason;
      f.external_code = external_->exit_code;
      for (auto& r : ranks_)
        if (r->child->exit) f.others.push_back(describe(*r));
      return f;
    }
    // A rank that failed on its own after the launcher was told to stop is still the root cause.
    if (!root_) {
      for (auto& r : ranks_)
        if (r->child->exit && !r->child->exit->ok() && !r->stopped_by_us &&
            (!root_ || *r->child->ended < *root_->child->ended))
          root_ = r.get();
    }
    if (!root_) return std::nullopt;
    Failure f;
    if (stall_.empty()) blame_earliest_error_file(f);
    f.root = describe(*root_);
    if (!stall_.empty()) f.cause = stall_;
    for (auto& r : ranks_)
      if (r.get() != root_ && r->child->exit && !r->child->exit->ok()) f.others.push_back(describe(*r));
    return f;
  }

  // When this rank's error file (TORCHELASTIC_ERROR_FILE) was written, if it was.
  std::optional<std::chrono::system_clock::time_point> error_file_time(const RankRun& r) const {
    if (!r.worker->env.count("TORCHELASTIC_ERROR_FILE")) return std::nullopt;
    std::string path = plan::attempt_env(*r.worker, attempt_, opt_.error_file_dir)["TORCHELASTIC_ERROR_FILE"];
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
        std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
  }

  // torchrun's rule: the rank with the earliest error file failed first. A rank can fail (disk
  // full) and stay alive in its cleanup while a peer times out waiting for it and exits first;
  // the first exit would blame the peer. The exit code stays the first exit's.
  void blame_earliest_error_file(Failure& f) {
    RankRun* first = nullptr;
    std::chrono::system_clock::time_point first_t;
    for (auto& r : ranks_) {
      if (!r->child->exit || r->child->exit->ok()) continue;
      auto t = error_file_time(*r);
      if (t && (!first || *t < first_t)) {
        first = r.get();
        first_t = *t;
      }
    }
    if (!first || first == root_) return;
    auto root_t = error_file_time(*root_);
    if (first_t >= (root_t ? *root_t : root_->child->ended_wall)) return;
    int code = root_->child->exit->launcher_code();
    f.exit_code = code == 0 ? 1 : code;
    f.first_by_error_file = fmt::format(
        "rank {} wrote its error file {:.1f} s before rank {} {}; rank {} exited first (exit code {})",
        first->worker->rank, std::chrono::duration<double>((root_t ? *root_t : root_->child->ended_wall) - first_t).count(),
        root_->worker->rank, root_t ? "wrote its own" : "exited", root_->worker->rank, *f.exit_code);
    root_ = first;
  }

  RankFailure describe(RankRun& r) {
    RankFailure d;
    d.host = r.host;
    d.rank = r.worker->rank;
    d.local_rank = r.worker->local_rank;
    d.pid = r.child->pid;
    d.status = *r.child->exit;
    d.elapsed_s = std::chrono::duration<double>(*r.child->ended - r.child->started).count();
    d.stopped_by_launcher = r.stopped_by_us;
    d.stderr_tail.assign(r.output->stderr_tail().begin(), r.output->stderr_tail().end());
    auto ef = r.worker->env.find("TORCHELASTIC_ERROR_FILE");
    if (ef != r.worker->env.end()) {
      std::string path = plan::attempt_env(*r.worker, attempt_, opt_.error_file_dir)["TORCHELASTIC_ERROR_FILE"];
      std::ifstream in(path);
      if (in) d.error_file = path;
      d.error_file_removed = opt_.error_files_removed;
    }
    return d;
  }

  const plan::LaunchPlan& plan_;
  const SuperviseOptions& opt_;
  int attempt_;
  asio::io_context& io_;
  asio::steady_timer progress_timer_, stopped_timer_;
  std::unique_ptr<ProgressWatch> progress_;
  std::optional<ExternalStop> external_;
  std::string stall_;
  std::vector<std::unique_ptr<RankRun>> ranks_;
  RankRun* root_ = nullptr;
  int stop_signal_ = 0;
  int notice_signal_ = 0;  // USR1/USR2 forwarded to the ranks
  long oom_before_ = -1;
  ChildGroup group_;  // last: its handlers use the members above
};

// The pause before a restart, on the event loop: SIGINT/SIGTERM/SIGHUP end it (and the job)
// at once; other signals (a stray SIGCHLD, a notice) are consumed. Returns the stop signal or 0.
int pause_before_restart(asio::io_context& io, asio::signal_set& signals, std::chrono::milliseconds delay) {
  asio::steady_timer timer(io);
  bool over = false;
  int stop = 0;
  timer.expires_after(delay);
  timer.async_wait([&](boost::system::error_code ec) {
    if (!ec) over = true;
  });
  std::function<void()> wait_signal = [&] {
    signals.async_wait([&](boost::system::error_code ec, int sig) {
      if (ec) return;
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
        stop = sig;
        over = true;
        timer.cancel();
        return;
      }
      wait_signal();
    });
  };
  wait_signal();
  io.restart();
  while (!over && io.run_one()) {
  }
  timer.cancel();
  signals.cancel();
  io.restart();
  io.poll();
  return stop;
}

// The failure report on stderr, then the job's MLflow run ended FAILED with its first line.
void report_failure(const plan::LaunchPlan& plan, const SuperviseOptions& opt, const Failure& f, int attempt) {
  const std::string text = format_report(plan, f, attempt, plan.max_restarts);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  end_tracked_run(plan, opt.error_file_dir, attempt, TrackedEnd::Failed, text.substr(0, text.find('\n')));
}

int supervise_attempts(const plan::LaunchPlan& plan, ProcessRunner& runner, const SuperviseOptions& opt,
                       asio::io_context& io, asio::signal_set& signals) {
  int streak = 0;  // restarts in a row after quick failures (restart_backoff.hpp)
  for (int attempt = opt.first_attempt;; ++attempt) {
    int stop_signal = 0, notice_signal = 0;
    std::optional<Failure> failure;
    auto started = Clock::now();
    {
      Attempt a(plan, runner, opt, attempt, io, signals);
      failure = a.run(stop_signal, notice_signal);
    }
    if (stop_signal) {
      std::fprintf(stderr, "mtrain: stopped by %s; every rank has exited\n", signal_name(stop_signal).c_str());
      if (failure) print_report(stderr, plan, *failure, attempt, plan.max_restarts);
      end_tracked_run(plan, opt.error_file_dir, attempt, TrackedEnd::Killed, "");
      return 128 + stop_signal;
    }
    if (!failure) return 0;
    if (failure->external) {
      report_failure(plan, opt, *failure, attempt);
      return failure->external_code;
    }
    if (notice_signal) {
      // The ranks were told to wind down (preemption): ending is expected, restarting is not.
      std::fprintf(stderr, "mtrain: ranks wound down after %s; not restarting\n", signal_name(notice_signal).c_str());
      if (failure->root.status.signaled || failure->root.status.code != 128 + notice_signal)
        print_report(stderr, plan, *failure, attempt, plan.max_restarts);
      end_tracked_run(plan, opt.error_file_dir, attempt, TrackedEnd::Killed, "");
      int code = failure->exit_code.value_or(failure->root.status.launcher_code());
      return code == 0 ? 1 : code;
    }
    if (attempt - opt.first_attempt < plan.max_restarts) {
      streak = next_streak(streak, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started),
                           opt.backoff);
      auto delay = restart_delay(streak, opt.backoff);
      std::fprintf(stderr, "mtrain: attempt %d failed: rank %d (%s) %s; restarting in %.1f s (restart %d/%d)\n",
                   attempt, failure->root.rank, failure->root.host.c_str(), failure->root.status.describe().c_str(),
                   std::chrono::duration<double>(delay).count(), attempt + 1, plan.max_restarts);
      if (delay.count() > 0) {
        if (int sig = pause_before_restart(io, signals, delay)) {
          std::fprintf(stderr, "mtrain: stopped by %s before restart %d; no rank is running\n",
                       signal_name(sig).c_str(), attempt + 1);
          print_report(stderr, plan, *failure, attempt, plan.max_restarts);
          end_tracked_run(plan, opt.error_file_dir, attempt, TrackedEnd::Killed, "");
          return 128 + sig;
        }
      }
      continue;
    }
    report_failure(plan, opt, *failure, attempt);
    if (!failure->cause.empty()) return kExitStalled;
    if (failure->exit_code) return *failure->exit_code;
    int code = failure->root.status.launcher_code();
    return code == 0 ? 1 : code;
  }
}

}  // namespace

int supervise(const plan::LaunchPlan& plan, ProcessRunner& runner, const SuperviseOptions& opt) {
  asio::io_context io;
  // A notice held since the launcher started (launcher_signals.hpp) found no rank to tell.
  for (int sig : take_held_notices())
    std::fprintf(stderr, "mtrain: %s arrived before any rank started: no rank to pass it on to (notices are "
                         "passed on to the ranks while they run)\n", signal_name(sig).c_str());
  // Installed before the first spawn so that no SIGCHLD or Ctrl-C is missed.
  std::optional<asio::signal_set> signals(std::in_place, io, SIGCHLD, SIGINT, SIGTERM);
  signals->add(SIGHUP);
  signals->add(SIGUSR1);
  signals->add(SIGUSR2);
  release_notice_signals();
  // Asio gives the signals back to their default action when the set goes away: a notice
  // (USR1) at that moment must not end a job that succeeded (launcher_signals.hpp).
  auto release = [&] {
    NoticeSignalsClosing closing;
    signals.reset();
  };
  int rc;
  try {
    rc = supervise_attempts(plan, runner, opt, io, *signals);
  } catch (...) {
    release();
    throw;
  }
  release();
  return rc;
}

}  // namespace mtrain::launch
