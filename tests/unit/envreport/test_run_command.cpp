#include <unistd.h>

#include <cstdio>

#include <catch2/catch.hpp>

#include "mtrain/envreport/run_command.hpp"

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

TEST_CASE("run_command reports a program that does not exist", "[envreport][run]") {
  auto r = run_command({"/nonexistent/program-xyz"});
  CHECK_FALSE(r.started);
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
