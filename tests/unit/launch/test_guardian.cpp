// The guardian driven directly, with real processes: a process group whose leader forked a
// sleeping grandchild (what a rank with a data-loader child looks like). Closing the launcher
// end is exactly what the kernel does when the launcher dies, SIGKILL included.
#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "lib/launch/guardian.hpp"
#include "lib/launch/process.hpp"

using mtrain::launch::Guardian;
using namespace std::chrono_literals;

namespace {

// Alive = exists and is not a zombie (an orphan's zombie may wait for an init that never reaps).
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  char state = stat[close + 2];
  return state != 'Z' && state != 'X';
}

bool within(std::chrono::milliseconds limit, const std::function<bool()>& cond) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!cond()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

std::optional<int> reap_within(pid_t pid, std::chrono::milliseconds limit) {
  int status = 0;
  bool done = within(limit, [&] { return waitpid(pid, &status, WNOHANG) == pid; });
  return done ? std::optional<int>(status) : std::nullopt;
}

// A line from `fd`, waiting at most 10 s.
std::string read_line(int fd) {
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  char c;
  while (std::chrono::steady_clock::now() < deadline) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) != 1) continue;
    if (read(fd, &c, 1) != 1 || c == '\n') break;
    line += c;
  }
  return line;
}

struct Group {
  pid_t leader = -1;      // our child, leader of its own group
  pid_t grandchild = -1;  // forked by the leader: re-parented when the leader dies
};

// A rank started by `runner` running `script`, which prints the pid of a child it forked first.
Group spawn_rank_with_child(mtrain::launch::PosixProcessRunner& runner, const std::string& script) {
  mtrain::launch::SpawnRequest req;
  req.argv = {"/bin/sh", "-c", script};
  req.env = {{"PATH", "/usr/bin:/bin"}};
  auto s = runner.spawn(req);
  std::string line = read_line(s.stdout_fd.get());
  s.stdout_fd.reset();
  s.stderr_fd.reset();
  REQUIRE(!line.empty());
  return {s.pid, std::stoi(line)};
}

// sh forks `sleep 300` in the background, prints its pid and becomes `sleep 301`.
Group start_group() {
  int p[2];
  REQUIRE(pipe(p) == 0);
  const char* argv[] = {"/bin/sh", "-c", "sleep 300 & echo $!; exec sleep 301", nullptr};
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);
    dup2(p[1], 1);
    execv(argv[0], const_cast<char* const*>(argv));
    _exit(127);
  }
  setpgid(pid, pid);
  close(p[1]);
  Group g;
  g.leader = pid;
  std::string line = read_line(p[0]);
  close(p[0]);
  g.grandchild = line.empty() ? -1 : std::stoi(line);
  REQUIRE(g.grandchild > 1);
  return g;
}

void kill_group(const Group& g) {
  killpg(g.leader, SIGKILL);
  reap_within(g.leader, 10s);
  within(10s, [&] { return !alive(g.grandchild); });
}

bool exited_with(const std::optional<int>& status, int code) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}

}  // namespace

TEST_CASE("guardian: the launcher end closes with a group watched → the whole group dies", "[launch][guardian]") {
  Guardian guard;
  guard.start();
  REQUIRE(guard.running());
  Group g = start_group();
  REQUIRE(alive(g.grandchild));
  CHECK(guard.watch(g.leader));
  auto status = guard.close(10s);
  CHECK(exited_with(status, Guardian::kExitKilledGroups));
  auto leader = reap_within(g.leader, 10s);
  REQUIRE(leader);
  CHECK(WIFSIGNALED(*leader));
  CHECK(WTERMSIG(*leader) == SIGKILL);
  CHECK(within(10s, [&] { return !alive(g.grandchild); }));
  kill_group(g);  // only matters if the checks above failed
}

TEST_CASE("guardian: a forgotten group survives the guardian", "[launch][guardian]") {
  Guardian guard;
  guard.start();
  Group g = start_group();
  CHECK(guard.watch(g.leader));
  CHECK(guard.forget(g.leader));
  CHECK(guard.watched().empty());
  CHECK(exited_with(guard.close(10s), 0));  // nothing left to kill
  CHECK(alive(g.leader));
  CHECK(alive(g.grandchild));
  kill_group(g);
  CHECK(!alive(g.grandchild));
}

TEST_CASE("guardian: with nothing watched it just exits", "[launch][guardian]") {
  Guardian never;
  CHECK(!never.close(1s));  // none was started
  Guardian guard;
  guard.start();
  pid_t pid = guard.pid();
  CHECK(alive(pid));
  CHECK(exited_with(guard.close(10s), 0));
  CHECK(!alive(pid));
}

TEST_CASE("guardian: ignores the signals a launcher's group gets, still does its job", "[launch][guardian]") {
  Guardian guard;
  guard.start();
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE}) REQUIRE(kill(guard.pid(), sig) == 0);
  CHECK(getpgid(guard.pid()) == guard.pid());  // its own group: a Ctrl-C to ours misses it
  Group g = start_group();
  CHECK(guard.watch(g.leader));
  auto status = guard.close(10s);
  REQUIRE(status);
  CHECK(!WIFSIGNALED(*status));  // a SIGTERM that was not ignored would show here
  CHECK(exited_with(status, Guardian::kExitKilledGroups));
  CHECK(within(10s, [&] { return !alive(g.grandchild); }));
  kill_group(g);
}

TEST_CASE("guardian: refuses process groups 0, 1 and the launcher's own", "[launch][guardian]") {
  Guardian guard;
  guard.start();
  CHECK(!guard.watch(0));
  CHECK(!guard.watch(1));
  CHECK(!guard.watch(-5));
  // The launcher's group is dropped by the guardian itself: closing must not kill this test.
  guard.watch(getpgrp());
  auto status = guard.close(10s);
  CHECK(status);
  CHECK(alive(getpid()));
}

TEST_CASE("guardian: one killed from outside is replaced and the groups stay watched", "[launch][guardian]") {
  Guardian guard;
  guard.start();
  Group g = start_group();
  CHECK(guard.watch(g.leader));
  pid_t first = guard.pid();
  REQUIRE(kill(first, SIGKILL) == 0);
  REQUIRE(within(10s, [&] { return !alive(first); }));  // a zombie: its end is closed
  Group h = start_group();
  CHECK(guard.watch(h.leader));  // finds it gone, starts another, sends both groups
  CHECK(guard.pid() != first);
  CHECK(exited_with(guard.close(10s), Guardian::kExitKilledGroups));
  CHECK(within(10s, [&] { return !alive(g.grandchild) && !alive(h.grandchild); }));
  reap_within(g.leader, 10s);
  reap_within(h.leader, 10s);
  kill_group(g);
  kill_group(h);
}

TEST_CASE("PosixProcessRunner: what a rank forked dies with a runner that never reaped it", "[launch][guardian]") {
  pid_t rank = -1, grandchild = -1;
  {
    mtrain::launch::PosixProcessRunner runner;
    const Group g = spawn_rank_with_child(runner, "sleep 300 & echo $!; exec sleep 301");
    rank = g.leader;
    grandchild = g.grandchild;
    CHECK(getpgid(rank) == rank);
    CHECK(alive(grandchild));
  }  // the runner goes away without reaping, as a killed launcher would
  auto status = reap_within(rank, 10s);
  REQUIRE(status);
  CHECK(WIFSIGNALED(*status));
  CHECK(within(10s, [&] { return !alive(grandchild); }));
  if (alive(grandchild)) kill(grandchild, SIGKILL);
}

TEST_CASE("PosixProcessRunner: what a rank left in its group dies when the rank is reaped", "[launch][guardian]") {
  // Issue 17 item 12: the group is SIGKILLed while the exited leader's zombie still holds its
  // number, then the leader is reaped (and forgotten by the guardian).
  pid_t rank = -1, grandchild = -1;
  mtrain::launch::PosixProcessRunner runner;
  const Group g = spawn_rank_with_child(runner, "sleep 300 </dev/null >/dev/null 2>&1 & echo $!; exit 3");
  rank = g.leader;
  grandchild = g.grandchild;
  std::vector<mtrain::launch::Reaped> got;
  REQUIRE(within(10s, [&] {
    auto r = runner.reap({rank});
    got.insert(got.end(), r.begin(), r.end());
    return !got.empty();
  }));
  CHECK(WEXITSTATUS(got.at(0).status) == 3);  // the leader's own status, not the group kill's
  CHECK(within(10s, [&] { return !alive(grandchild); }));
  if (alive(grandchild)) kill(grandchild, SIGKILL);
}
