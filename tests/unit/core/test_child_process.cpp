#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <chrono>

#include "lib/core/child_process.hpp"

using mtrain::ChildOptions;
using mtrain::ChildResult;
using mtrain::run_child;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

long peak_rss_kib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

TEST_CASE("a child's stdout, stderr and exit code come back, nothing goes through a shell", "[child_process]") {
  const ChildResult r = run_child({"sh", "-c", "printf out; printf err >&2; exit 3"});
  CHECK(r.started);
  CHECK(r.out == "out");
  CHECK(r.err == "err");
  CHECK(r.exit_code == 3);
  CHECK_FALSE(r.timed_out);
  // An argument with shell syntax is one argument, not a command.
  const ChildResult e = run_child({"echo", "a; touch /nonexistent/x $(id) `id`"});
  CHECK(e.out == "a; touch /nonexistent/x $(id) `id`\n");
  CHECK(e.exit_code == 0);
}

TEST_CASE("a program that cannot be executed is not started, with the reason", "[child_process]") {
  const ChildResult r = run_child({"/nonexistent/mtrain-no-such-program"});
  CHECK_FALSE(r.started);
  CHECK_THAT(r.exec_error, Catch::Contains("No such file"));
  CHECK_FALSE(run_child({}).started);
}

TEST_CASE("the deadline: SIGTERM, then SIGKILL after the grace for a child that ignores SIGTERM", "[child_process]") {
  ChildOptions o;
  o.deadline = std::chrono::milliseconds(200);
  o.grace = std::chrono::milliseconds(300);
  // A child that stops at SIGTERM ends at the deadline.
  auto t0 = Clock::now();
  const ChildResult term = run_child({"sleep", "30"}, o);
  CHECK(term.timed_out);
  CHECK_FALSE(term.killed);
  CHECK(term.exit_code == 128 + 15);
  CHECK(seconds_since(t0) < 2.0);
  // One that ignores it (and its own child, in the same group) is killed after the grace.
  t0 = Clock::now();
  const ChildResult kill = run_child({"sh", "-c", "trap '' TERM; sleep 30; sleep 30"}, o);
  const double took = seconds_since(t0);
  CHECK(kill.timed_out);
  CHECK(kill.killed);
  CHECK(kill.exit_code == 128 + 9);
  CHECK(took >= 0.45);
  CHECK(took < 3.0);
  // A child that closes its output and goes on is still bounded by the deadline.
  t0 = Clock::now();
  const ChildResult closed = run_child({"sh", "-c", "exec >/dev/null 2>&1; trap '' TERM; sleep 30"}, o);
  CHECK(closed.killed);
  CHECK(seconds_since(t0) < 3.0);
}

TEST_CASE("output beyond the caps is read and dropped: the caller's memory does not grow", "[child_process]") {
  ChildOptions o;
  o.max_stdout = 1u << 20;
  o.max_stderr = 4096;
  const long before = peak_rss_kib();
  // 512 MiB on each stream.
  const ChildResult r = run_child({"sh", "-c", "head -c 536870912 /dev/zero & head -c 536870912 /dev/zero >&2; wait"}, o);
  const long grown_kib = peak_rss_kib() - before;
  CHECK(r.exit_code == 0);
  CHECK(r.out.size() == o.max_stdout);
  CHECK(r.out_truncated);
  CHECK(r.err.size() == o.max_stderr);
  CHECK(r.err_truncated);
  CHECK(grown_kib < 32 * 1024);
  // The tail of stderr is what is kept (the error is at the end).
  const ChildResult tail = run_child({"sh", "-c", "head -c 100000 /dev/zero | tr '\\0' a >&2; printf END >&2"}, o);
  CHECK(tail.err.size() == o.max_stderr);
  CHECK(tail.err.substr(tail.err.size() - 3) == "END");
}

TEST_CASE("the environment can be replaced, and stderr merged into stdout", "[child_process]") {
  ChildOptions o;
  o.replace_environment = true;
  o.environment = {"MTRAIN_CHILD_TEST=42", "PATH=/usr/bin:/bin"};
  o.merge_stderr = true;
  const ChildResult r = run_child({"sh", "-c", "printf \"$MTRAIN_CHILD_TEST\"; printf x >&2; printf \"${HOME:-nohome}\""}, o);
  CHECK(r.out == "42xnohome");
}
