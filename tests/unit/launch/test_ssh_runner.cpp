// The ssh launcher over an in-memory ProcessRunner: what it runs on each host, how secrets
// travel, and that stopping a job signals the process groups the agents announced or recorded.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "fakes/fake_process_runner.hpp"
#include "captured.hpp"
#include "lib/launch/ssh_runner.hpp"

using namespace mtrain::launch;
using mtrain::testing::FakeProcessRunner;
using mtrain::testing::FakeScript;

namespace {

const std::string kToken = "0123456789abcdef0123456789abcdef";

SshRunOptions two_nodes(std::FILE* out) {
  SshRunOptions o;
  o.job_id = "job-7";
  o.nodes = {{"worker-0", "", {"/opt/mtrain dir/mtrain", "launch", "--ssh-agent", "--", "python3", "a b;c.py"}},
             {"worker-1", "alice", {"/opt/mtrain dir/mtrain", "launch", "--ssh-agent", "--", "python3", "a b;c.py"}}};
  o.env = {{"NCCL_DEBUG", "INFO"}};
  o.token = kToken;
  o.grace = std::chrono::milliseconds(200);
  o.out = out;
  o.err = out;
  return o;
}

std::string last_arg(const SpawnRequest& r) { return r.argv.back(); }

bool is_stop(const SpawnRequest& r) { return last_arg(r).find("kill -s") != std::string::npos; }

std::string read_all(int fd) {
  fcntl(fd, F_SETFL, O_NONBLOCK);
  std::string s;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

}  // namespace

TEST_CASE("ssh runner: an agent failing stops the other by its announced process group", "[launch][ssh]") {
  std::FILE* out = std::tmpfile();
  auto opt = two_nodes(out);
  FakeProcessRunner runner;
  runner.script = [](const SpawnRequest& r) {
    FakeScript s;
    if (is_stop(r)) return s;  // the stop command itself: exits 0 at once
    bool node1 = std::find(r.argv.begin(), r.argv.end(), "alice@worker-1") != r.argv.end();
    s.out = node1 ? "MTRAIN_AGENT job=job-7 pgid=4242\n[worker-1:1] hello\n" : "MTRAIN_AGENT job=job-7 pgid=5151\n";
    s.err = node1 ? "" : "rank 0 crashed\n";
    s.exits_now = !node1;
    s.exit_code = 3;
    return s;
  };
  int rc = run_over_ssh(opt, runner);
  CHECK(rc == 3);

  // What ran: two agents, then one stop command to worker-1 naming the group it announced.
  REQUIRE(runner.spawned.size() >= 3);
  const auto& a0 = runner.spawned[0];
  CHECK(a0.argv[0] == "ssh");
  CHECK(std::find(a0.argv.begin(), a0.argv.end(), "BatchMode=yes") != a0.argv.end());
  CHECK(a0.stdin_pipe);
  for (const auto& r : runner.spawned)
    for (const auto& arg : r.argv) CHECK(arg.find(kToken) == std::string::npos);  // never in an argv
  CHECK(last_arg(a0).find("'/opt/mtrain dir/mtrain' launch --ssh-agent -- python3 'a b;c.py'") != std::string::npos);
  CHECK(last_arg(a0).find("export NCCL_DEBUG=INFO") != std::string::npos);
  // The fake agent ignores the remote TERM, so KILL follows after the grace period.
  std::vector<std::string> stops;
  for (const auto& r : runner.spawned) {
    if (!is_stop(r)) continue;
    CHECK(std::find(r.argv.begin(), r.argv.end(), "alice@worker-1") != r.argv.end());
    stops.push_back(last_arg(r));
  }
  // TERM, then KILL: by the announced group, or by the recorded one if the announcement was
  // still unread when worker-0 failed (the fake writes both at once).
  REQUIRE(stops.size() == 2);
  CHECK((stops[0] == "kill -s TERM -- -4242" ||
         (stops[0].find("/mtrain-job-7/worker-1.pgid") != std::string::npos && stops[0].find("kill -s TERM") != std::string::npos)));
  CHECK(stops[1] == "kill -s KILL -- -4242");
  // The secret went to each agent's stdin.
  CHECK(read_all(runner.stdin_read_fds.begin()->second) == kToken + "\n");

  std::string text = slurp(out);
  CHECK(text.find("[worker-1:1] hello") != std::string::npos);
  CHECK(text.find("MTRAIN_AGENT") == std::string::npos);  // announcements are not relayed
  CHECK(text.find("the agent on worker-0 (node rank 0) ended with exit code 3") != std::string::npos);
  CHECK(text.find("rank 0 crashed") != std::string::npos);
  std::fclose(out);
}

TEST_CASE("ssh runner: a failed store stops every agent, without an announcement the record is used", "[launch][ssh]") {
  std::FILE* out = std::tmpfile();
  auto opt = two_nodes(out);
  opt.poll = std::chrono::milliseconds(20);
  opt.job_status = [] {
    mtrain::rendezvous::StoreStatus s;
    s.phase = mtrain::rendezvous::Phase::failed;
    s.reason = "node 'worker-1' (node rank 1) stopped sending heartbeats (none for more than 3.0 s); stopping the job";
    s.failed_nodes = {"worker-1"};
    return s;
  };
  FakeProcessRunner runner;
  runner.script = [](const SpawnRequest& r) {
    FakeScript s;
    if (is_stop(r)) return s;
    s.exits_now = false;  // both agents run until stopped; worker-0 announced, worker-1 did not
    bool node1 = std::find(r.argv.begin(), r.argv.end(), "alice@worker-1") != r.argv.end();
    if (!node1) s.out = "MTRAIN_AGENT job=job-7 pgid=5151\n";
    return s;
  };
  int rc = run_over_ssh(opt, runner);
  CHECK(rc == 1);  // a lost node
  bool by_pgid = false, by_record = false;
  for (const auto& r : runner.spawned) {
    if (!is_stop(r)) continue;
    if (last_arg(r) == "kill -s TERM -- -5151") by_pgid = true;
    if (last_arg(r).find("/mtrain-job-7/worker-1.pgid") != std::string::npos &&
        last_arg(r).find("kill -s TERM") != std::string::npos)
      by_record = true;
    CHECK(last_arg(r).find("pkill") == std::string::npos);
    CHECK(last_arg(r).find("killall") == std::string::npos);
  }
  CHECK(by_pgid);
  CHECK(by_record);
  CHECK(runner.signals_sent(SIGKILL) >= 2);  // the local ssh processes after the grace period
  std::string text = slurp(out);
  CHECK(text.find("failed: node 'worker-1' (node rank 1) stopped sending heartbeats") != std::string::npos);
  std::fclose(out);
}

TEST_CASE("ssh runner: the bundled trainer's job travels on stdin after the token", "[launch][ssh]") {
  std::FILE* out = std::tmpfile();
  auto opt = two_nodes(out);
  opt.nodes.resize(1);
  opt.nodes[0].agent_argv = {"mtrain", "launch", "--ssh-agent"};
  opt.job_spec = R"({"model":{"name":"gpt"},"train":{"steps":3}})";
  FakeProcessRunner runner;
  runner.script = [](const SpawnRequest&) { return FakeScript{"MTRAIN_AGENT job=job-7 pgid=77\n", "", true, 0}; };
  CHECK(run_over_ssh(opt, runner) == 0);
  REQUIRE(runner.spawned.size() == 1);
  CHECK(read_all(runner.stdin_read_fds.begin()->second) == kToken + "\n" + opt.job_spec + "\n");
  const std::string& line = runner.spawned[0].argv.back();
  CHECK(line.find("IFS= read -r MTRAIN_RDZV_TOKEN || exit 97; export MTRAIN_RDZV_TOKEN; "
                  "IFS= read -r MTRAIN_JOB_SPEC || exit 97; export MTRAIN_JOB_SPEC") != std::string::npos);
  CHECK(line.find("gpt") == std::string::npos);
  std::fclose(out);
}

namespace {
// Two agents under a job with restarts: worker-1's first ssh ends at once (exit 255, the host
// lost); every other agent runs until stopped. The store is a plain state the test moves.
struct ElasticJob {
  std::FILE* out = std::tmpfile();
  SshRunOptions opt = two_nodes(out);
  FakeProcessRunner runner;
  mtrain::rendezvous::Phase phase = mtrain::rendezvous::Phase::running;
  std::vector<std::string> lost;
  int node1_spawns = 0;
  ElasticJob() {
    opt.poll = std::chrono::milliseconds(20);
    opt.restarts = true;
    opt.respawn.base = std::chrono::milliseconds(10);
    opt.job_status = [this] {
      mtrain::rendezvous::StoreStatus s;
      s.phase = phase;
      if (phase == mtrain::rendezvous::Phase::failed) {
        s.reason = "the job could not re-form after restart 1 of 1 (…); nodes lost: worker-1";
        s.failed_nodes = {"worker-1"};
      }
      return s;
    };
    runner.script = [this](const SpawnRequest& r) {
      FakeScript s;
      if (is_stop(r)) return s;
      const bool node1 = std::find(r.argv.begin(), r.argv.end(), "alice@worker-1") != r.argv.end();
      s.exits_now = false;
      if (node1 && ++node1_spawns == 1) {
        s.exits_now = true;
        s.exit_code = 255;
      }
      return s;
    };
  }
  ~ElasticJob() { std::fclose(out); }
  size_t agents_spawned() const {
    size_t n = 0;
    for (const auto& r : runner.spawned) n += is_stop(r) ? 0 : 1;
    return n;
  }
};
}  // namespace

TEST_CASE("ssh runner: with restarts a lost host does not stop the others, the store is told and a new agent starts",
          "[launch][ssh][elastic]") {
  ElasticJob j;
  size_t agents_when_lost = 0, signals_when_respawned = 0;
  j.opt.lose_node = [&](const std::string& host, const std::string& why) {
    j.lost.push_back(host + ": " + why);
    agents_when_lost = j.agents_spawned();
    return true;
  };
  // Once the new agent on worker-1 is up, the test ends the job through the store (failed), which
  // is the one way the fake agents, which run until stopped, end.
  auto status = j.opt.job_status;
  j.opt.job_status = [&] {
    if (j.node1_spawns >= 2 && j.phase == mtrain::rendezvous::Phase::running) {
      signals_when_respawned = j.runner.signals.size();
      j.phase = mtrain::rendezvous::Phase::failed;
    }
    return status();
  };
  int rc = run_over_ssh(j.opt, j.runner);
  CHECK(rc == 1);
  REQUIRE(j.lost.size() == 1);
  CHECK(j.lost[0] == "worker-1: ssh to worker-1 failed or the connection was lost (ssh exit 255)");
  CHECK(agents_when_lost == 2);
  CHECK(j.node1_spawns == 2);            // a new agent on the lost host
  CHECK(signals_when_respawned == 0);    // nobody was stopped for the loss
  std::string text = slurp(j.out);
  CHECK(text.find("node worker-1 lost (ssh to worker-1 failed") != std::string::npos);
  CHECK(text.find("the job goes on without it") != std::string::npos);
  CHECK(text.find("(lost; replaced)") != std::string::npos);
  CHECK(text.find("nodes lost: worker-1") != std::string::npos);  // the store's reason at the end
}

TEST_CASE("ssh runner: with restarts, a loss the store cannot survive stops every agent and starts none",
          "[launch][ssh][elastic]") {
  ElasticJob j;
  j.opt.lose_node = [&](const std::string& host, const std::string&) {
    j.lost.push_back(host);
    j.phase = mtrain::rendezvous::Phase::failed;  // no restart left
    return true;
  };
  int rc = run_over_ssh(j.opt, j.runner);
  CHECK(rc == 1);
  CHECK(j.lost == std::vector<std::string>{"worker-1"});
  CHECK(j.node1_spawns == 1);
  CHECK(j.runner.signals_sent(SIGKILL) >= 1);  // worker-0's ssh after the grace period
}

TEST_CASE("ssh runner: without restarts a lost host still ends the job at once", "[launch][ssh][elastic]") {
  ElasticJob j;
  j.opt.restarts = false;
  bool told = false;
  j.opt.lose_node = [&](const std::string&, const std::string&) { return told = true; };
  int rc = run_over_ssh(j.opt, j.runner);
  CHECK(rc == 1);
  CHECK_FALSE(told);
  CHECK(j.node1_spawns == 1);
  CHECK(slurp(j.out).find("ssh to worker-1 failed or the connection was lost") != std::string::npos);
}
