#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <catch2/catch.hpp>

#include "lib/envreport/run_command.hpp"

using namespace mtrain::envreport;

TEST_CASE("run_command captures output and the exit code", "[envreport][run]") {
  auto r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  CHECK(r.started);
  CHECK(r.rc == 3);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
}

TEST_CASE("run_command stops a command at its deadline", "[envreport][run]") {
  RunOptions o;
  o.timeout_ms = 200;
  auto r = run_command({"sleep", "20"}, o);
  CHECK(r.started);
  CHECK(r.rc == 124);
}

TEST_CASE("run_command kills a command that ignores SIGTERM 2 s after its deadline", "[envreport][run]") {
  RunOptions o;
  o.timeout_ms = 200;
  const auto t0 = std::chrono::steady_clock::now();
  // The ignored SIGTERM is inherited by sleep; output before the deadline is kept.
  auto r = run_command({"sh", "-c", "echo partial; trap '' TERM; sleep 20"}, o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.rc == 124);
  CHECK(r.out == "partial\n");
  CHECK(s >= 2.0);   // SIGTERM did not end it; SIGKILL did, 2 s later
  CHECK(s < 15.0);   // not the sleep's 20 s
}

TEST_CASE("run_command reports a child killed by a signal as 128 + the signal", "[envreport][run]") {
  auto r = run_command({"sh", "-c", "kill -KILL $$"});
  CHECK(r.started);
  CHECK(r.rc == 128 + 9);
}

TEST_CASE("run_command reports a program that does not exist", "[envreport][run]") {
  auto r = run_command({"/nonexistent/program-xyz"});
  CHECK_FALSE(r.started);
  CHECK(r.err == std::strerror(ENOENT));
}

TEST_CASE("run_command writes stdout to a file and sets the environment", "[envreport][run]") {
  RunOptions o;
  o.stdout_file = "/tmp/mtrain_test_run_command_" + std::to_string(::getpid());
  o.merge_stderr = true;
  o.env = std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}, {"ONLY", "this"}};
  auto r = run_command({"sh", "-c", "echo $ONLY; echo e >&2"}, o);
  CHECK(r.rc == 0);
  CHECK(r.out.empty());
  std::FILE* f = std::fopen(o.stdout_file.c_str(), "r");
  REQUIRE(f);
  char buf[64] = {0};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::remove(o.stdout_file.c_str());
  CHECK(std::string(buf, n) == "this\ne\n");
}
