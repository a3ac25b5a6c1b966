#include <catch2/catch.hpp>

#include <csignal>

#include <boost/asio/post.hpp>

#include "fakes/fake_process_runner.hpp"
#include "lib/launch/progress_watch.hpp"
#include "lib/launch/supervisor.hpp"

using namespace mtrain;
using testing::FakeProcessRunner;
using testing::FakeScript;

namespace {
plan::LaunchPlan make_plan(int n, int max_restarts) {
  plan::PlanOptions o;
  o.program = {"/bin/train"};
  o.job_id = "job";
  o.nproc_per_node = mtrain::config::RankCount::count(n);
  o.max_restarts = max_restarts;
  plan::HostFacts f;
  f.hostname = "h";
  f.cpu_count = 4;
  return plan::build_plan(o, f);
}
launch::SuperviseOptions quiet() {
  launch::SuperviseOptions s;
  s.grace_period = std::chrono::milliseconds(50);
  s.output.ranks_filter = {9999};  // keep the test's console clean
  s.backoff.base = std::chrono::milliseconds(0);  // restarts at once (the pause has its own test)
  return s;
}
int rank_of(const launch::SpawnRequest& r) { return std::stoi(r.env.at("RANK")); }
int attempt_of(const launch::SpawnRequest& r) { return std::stoi(r.env.at("TORCHELASTIC_RESTART_COUNT")); }
}  // namespace

TEST_CASE("all ranks succeed → 0, nobody is signalled", "[launch][supervisor]") {
  for (int n = 1; n <= 4; ++n) {
    FakeProcessRunner r;
    r.script = [](const launch::SpawnRequest&) { return FakeScript{"hello\n", "", true, 0}; };
    CHECK(launch::supervise(make_plan(n, 0), r, quiet()) == 0);
    CHECK(r.spawned.size() == size_t(n));
    CHECK(r.signals.empty());
  }
}

TEST_CASE("a failing rank tears the rest down and its code is the exit code", "[launch][supervisor]") {
  FakeProcessRunner r;
  r.script = [](const launch::SpawnRequest& req) {
    if (rank_of(req) == 2) return FakeScript{"", "boom\n", true, 3};
    return FakeScript{"", "", false, 0};
  };
  CHECK(launch::supervise(make_plan(4, 0), r, quiet()) == 3);
  CHECK(r.signals_sent(SIGTERM) == 3);  // every other rank
  CHECK(r.signals_sent(SIGKILL) == 0);
}

TEST_CASE("a rank that ignores SIGTERM is SIGKILLed after the grace period", "[launch][supervisor]") {
  FakeProcessRunner r;
  r.script = [](const launch::SpawnRequest& req) {
    if (rank_of(req) == 0) return FakeScript{"", "", true, 1};
    FakeScript s;
    s.exits_now = false;
    s.ignores_term = true;
    return s;
  };
  CHECK(launch::supervise(make_plan(2, 0), r, quiet()) == 1);
  CHECK(r.signals_sent(SIGTERM) == 1);
  CHECK(r.signals_sent(SIGKILL) == 1);
}

TEST_CASE("restarts rerun the whole group with the attempt number", "[launch][supervisor]") {
  FakeProcessRunner r;
  r.script = [](const launch::SpawnRequest& req) {
    if (rank_of(req) == 1 && attempt_of(req) < 2) return FakeScript{"", "", true, 7};
    return FakeScript{"", "", true, 0};
  };
  CHECK(launch::supervise(make_plan(2, 2), r, quiet()) == 0);
  REQUIRE(r.spawned.size() == 6);
  CHECK(attempt_of(r.spawned[4]) == 2);

  FakeProcessRunner again;
  again.script = [](const launch::SpawnRequest& req) {
    return FakeScript{"", "", true, rank_of(req) == 0 ? 9 : 0};
  };
  CHECK(launch::supervise(make_plan(2, 1), again, quiet()) == 9);
  CHECK(again.spawned.size() == 4);
}

TEST_CASE("a rank killed by a signal gives 128+signal", "[launch][supervisor]") {
  FakeProcessRunner r;
  int spawned = 0;
  r.script = [&](const launch::SpawnRequest&) {
    ++spawned;
    FakeScript s;
    s.exits_now = false;
    return s;
  };
  // Kill rank 0 "from outside" once both run: the supervisor sees SIGKILL as its status.
  launch::SuperviseOptions opt = quiet();
  struct Killer : FakeProcessRunner {
    launch::Spawned spawn(const launch::SpawnRequest& req) override {
      auto s = FakeProcessRunner::spawn(req);
      if (spawned.size() == 2) FakeProcessRunner::signal(s.pid - 1, SIGKILL);
      return s;
    }
  } k;
  k.script = r.script;
  CHECK(launch::supervise(make_plan(2, 0), k, opt) == 128 + SIGKILL);
}

namespace {
// Stops the attempt from outside as soon as it is started (as a failed job on another node does),
// and records what the supervisor told it.
struct StopAtStart : launch::AttemptWatcher {
  int started = 0, finished = 0;
  std::vector<std::string> failures;
  bool stop_now = true;
  void start(boost::asio::io_context& io, std::function<void(launch::ExternalStop)> stop) override {
    ++started;
    if (stop_now) boost::asio::post(io, [stop] { stop({"node 'worker-1' stopped sending heartbeats", 1}); });
  }
  void rank_failed(const std::string& what) override { failures.push_back(what); }
  void finish() override { ++finished; }
};
}  // namespace

TEST_CASE("a watcher stops every rank from outside, its code is the exit code, no restart", "[launch][supervisor]") {
  FakeProcessRunner r;
  r.script = [](const launch::SpawnRequest&) { return FakeScript{"", "", false, 0}; };
  StopAtStart w;
  auto opt = quiet();
  opt.watchers = {&w};
  CHECK(launch::supervise(make_plan(3, 2), r, opt) == 1);
  CHECK(r.spawned.size() == 3);  // max_restarts 2, but an outside stop is not restarted
  CHECK(r.signals_sent(SIGTERM) == 3);
  CHECK(w.started == 1);
  CHECK(w.finished == 1);
  CHECK(w.failures.empty());  // no rank failed on its own
}

TEST_CASE("a watcher hears about the first rank that fails on its own", "[launch][supervisor]") {
  FakeProcessRunner r;
  r.script = [](const launch::SpawnRequest& req) {
    if (rank_of(req) == 1) return FakeScript{"", "boom\n", true, 4};
    return FakeScript{"", "", false, 0};
  };
  StopAtStart w;
  w.stop_now = false;
  auto opt = quiet();
  opt.watchers = {&w};
  CHECK(launch::supervise(make_plan(2, 0), r, opt) == 4);
  REQUIRE(w.failures.size() == 1);
  CHECK(w.failures[0].find("rank 1 (local rank 1") != std::string::npos);
  CHECK(w.failures[0].find("exit code 4") != std::string::npos);
}

TEST_CASE("restarts after quick failures pause longer each time", "[launch][supervisor][backoff]") {
  FakeProcessRunner r;
  r.script = [](const launch::SpawnRequest&) { return FakeScript{"", "", true, 3}; };
  auto opt = quiet();
  opt.backoff.base = std::chrono::milliseconds(40);
  opt.backoff.cap = std::chrono::milliseconds(80);
  auto t0 = std::chrono::steady_clock::now();
  CHECK(launch::supervise(make_plan(1, 3), r, opt) == 3);
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(r.spawned.size() == 4);
  CHECK(took >= std::chrono::milliseconds(40 + 80 + 80));  // 40, then 80 (cap), 80
}

namespace {
// Rank 1 is "stopped" (as by SIGSTOP) from the start; nothing exits on its own.
struct StoppedRank1 : FakeProcessRunner {
  pid_t rank1 = -1;
  launch::Spawned spawn(const launch::SpawnRequest& req) override {
    auto s = FakeProcessRunner::spawn(req);
    if (rank_of(req) == 1) rank1 = s.pid;
    return s;
  }
  bool continued = false;
  void signal(pid_t pid, int sig) override {
    if (pid == rank1 && sig == SIGCONT) continued = true;
    FakeProcessRunner::signal(pid, sig);
  }
  bool stopped(pid_t pid) override { return pid == rank1 && !continued; }
};
}  // namespace

TEST_CASE("a rank stopped for stopped_timeout is the root cause, named, it gets SIGCONT", "[launch][supervisor]") {
  StoppedRank1 r;
  r.script = [](const launch::SpawnRequest&) { return FakeScript{"", "", false, 0}; };
  auto opt = quiet();
  opt.stopped_timeout = std::chrono::milliseconds(100);
  CHECK(launch::supervise(make_plan(3, 0), r, opt) == launch::kExitStalled);
  CHECK(r.signals_sent(SIGTERM) == 3);
  CHECK(r.signals_sent(SIGCONT) == 1);  // only the stopped one
}

namespace {
// Ends the round from outside with a notice (a scale up at a checkpoint: lib/launch/scale_up.hpp).
struct NoticeAtStart : launch::AttemptWatcher {
  std::vector<std::string> failures;
  void start(boost::asio::io_context& io, std::function<void(launch::ExternalStop)> stop) override {
    boost::asio::post(io, [stop] { stop({"the job restarts: node 'n9' is waiting to join", 1, SIGUSR1}); });
  }
  void rank_failed(const std::string& what) override { failures.push_back(what); }
  void finish() override {}
};
}  // namespace

TEST_CASE("a watcher's notice reaches every rank first, teardown only after the notice grace",
          "[launch][supervisor][scale_up]") {
  FakeProcessRunner r;
  r.script = [](const launch::SpawnRequest&) { return FakeScript{"", "", false, 0}; };  // ignores SIGUSR1
  NoticeAtStart w;
  auto opt = quiet();
  opt.watchers = {&w};
  opt.notice_grace = std::chrono::milliseconds(200);
  auto t0 = std::chrono::steady_clock::now();
  CHECK(launch::supervise(make_plan(3, 2), r, opt) == 1);
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(200));
  CHECK(r.spawned.size() == 3);  // not restarted here: the node agent re-joins the new round
  CHECK(r.signals_sent(SIGUSR1) == 3);
  CHECK(r.signals_sent(SIGTERM) == 3);  // the ranks that did not end on the notice
  // SIGUSR1 went out before any SIGTERM.
  size_t first_term = 0;
  while (first_term < r.signals.size() && r.signals[first_term].second != SIGTERM) ++first_term;
  CHECK(first_term == 3);
  CHECK(w.failures.empty());
}
