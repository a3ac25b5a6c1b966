// Running Slurm's client commands (lib/slurm/command.cpp): SystemRunner captures stdout, stderr
// and the exit code, says when a program cannot start, and kills a command's whole process group
// at its timeout; FakeRunner records each call.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "lib/slurm/command.hpp"
#include "temp_dir.hpp"

using namespace mtrain::slurm;
using mtrain::testing::TempDir;

TEST_CASE("command: output, errors and the exit code of a program", "[slurm][command]") {
  SystemRunner run;
  const CommandResult r = run.run({"/bin/sh", "-c", "printf 'out\\n'; printf 'err' >&2; exit 3"}, 10);
  CHECK(r.exit_code == 3);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err");
  CHECK_FALSE(r.not_found);
  CHECK_FALSE(r.timed_out);
  // Arguments are not a shell line: metacharacters arrive as written.
  CHECK(run.run({"/bin/echo", "a b", "$(x)", "'q'"}, 10).out == "a b $(x) 'q'\n");
  // A program killed by a signal reads as 128 + the signal.
  CHECK(run.run({"/bin/sh", "-c", "kill -TERM $$"}, 10).exit_code == 128 + SIGTERM);
  // More than a pipe buffer of output is read while the program writes it.
  CHECK(run.run({"/bin/sh", "-c", "head -c 300000 /dev/zero"}, 10).out.size() == 300000);
}

TEST_CASE("command: a program that cannot start is not_found, with the reason", "[slurm][command]") {
  SystemRunner run;
  const CommandResult missing = run.run({"no-such-program-of-mtrain"}, 10);
  CHECK(missing.not_found);
  CHECK(missing.errno_text == "No such file or directory");
  const CommandResult empty = run.run({}, 10);
  CHECK(empty.not_found);
  CHECK(empty.errno_text == "empty command");
}

TEST_CASE("command: the timeout kills the command and what it started", "[slurm][command]") {
  TempDir d("mtrain_command");
  const std::string marker = d.str() + "/survivor";
  SystemRunner run;
  const auto t0 = std::chrono::steady_clock::now();
  // The command's child keeps the pipes open and would write the marker after 2 s.
  const CommandResult r = run.run({"/bin/sh", "-c", "(sleep 2; touch " + marker + ") & sleep 30"}, 0.3);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.timed_out);
  CHECK(r.exit_code == 128 + SIGTERM);  // the one deadline policy (core/child_process): SIGTERM first
  CHECK(took < 5);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  CHECK_FALSE(std::filesystem::exists(marker));  // the whole group went
}

TEST_CASE("command: FakeRunner answers from its handler and records the calls", "[slurm][command]") {
  FakeRunner fake([](const std::vector<std::string>& argv) {
    CommandResult r;
    r.exit_code = argv.size() > 1 ? 0 : 1;
    r.out = argv[0];
    return r;
  });
  CHECK(fake.run({"squeue", "-h"}, 1).exit_code == 0);
  CHECK(fake.run({"sinfo"}, 1).out == "sinfo");
  CHECK(fake.calls == std::vector<std::vector<std::string>>{{"squeue", "-h"}, {"sinfo"}});
}
