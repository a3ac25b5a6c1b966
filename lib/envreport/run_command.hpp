#pragma once
// Run a program to completion with a deadline, capturing stdout and stderr: the reports' and
// benchmarks' shape (nvidia-smi, sinfo, mtrain-worker build-info, `mtrain launch` per benchmark
// cell) of core's child-process facility (core/child_process.hpp). Without a PATH lookup when
// argv[0] contains a '/'.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/envreport/system_probe.hpp"

namespace mtrain::envreport {

struct RunOptions {
  int timeout_ms = 10000;          // then SIGTERM to the child's process group, SIGKILL 2 s later
  std::optional<std::map<std::string, std::string>> env;  // the child's whole environment; unset: ours
  std::string stdout_file;         // write stdout here instead of capturing it
  bool merge_stderr = false;       // stderr into the stdout capture (or file)
};

// started=false when argv[0] cannot be executed; rc 124 when the deadline passed; 128+signal
// when the child was killed by a signal.
CommandResult run_command(const std::vector<std::string>& argv, const RunOptions& opt = {});

}  // namespace mtrain::envreport
