#pragma once
// `mtrain bench launch`: wall time from running `mtrain launch --nproc-per-node N` until every
// rank has passed a first barrier and the launcher has exited, beside torchrun's start-up floor
// (`/usr/bin/python3 -c 'import torch.distributed.run'`: what torchrun costs before it starts
// any rank). Rank programs: `mtrain __barrier` (plain TCP barrier, no LibTorch: the launcher's
// own cost) and, when installed, `mtrain-worker bench-comm --ops barrier` (LibTorch start-up and
// a c10d Gloo barrier: what the bundled trainer's ranks pay). Also the launcher's first answer,
// `mtrain --help` and `mtrain --version` (issue #30: each under 3 ms), for this mtrain and any
// other given to compare (an older build). Commands run interleaved round-robin so machine noise
// hits all alike.
#include <functional>
#include <string>
#include <vector>

#include "lib/bench/report.hpp"
#include "lib/envreport/system_probe.hpp"

namespace mtrain::bench {

struct LaunchBenchOptions {
  std::vector<int> nproc = {1, 2, 4, 8};
  int reps = 10;
  std::string mtrain_path;            // this mtrain
  std::vector<std::string> compare;   // other mtrain binaries whose first answer is timed too
  std::string worker_path;            // "" → no c10d row
  std::string python = "/usr/bin/python3";  // for the torchrun floor; "" → no floor row
  int timeout_ms = 120000;            // each command
};

// A timed command: what it was called, the argv, and its wall times.
struct TimedCommand {
  std::string label;
  int nproc = 0;  // 0: not a launch (a first answer, the floor)
  std::vector<std::string> argv;
  std::vector<double> seconds;
};

std::vector<TimedCommand> launch_commands(const LaunchBenchOptions& o);

// Runs every command `reps` times, interleaved; throws mtrain::Error naming a failing command
// (with its output). `run` is envreport::run_command in production.
using Runner = std::function<envreport::CommandResult(const std::vector<std::string>&, int timeout_ms)>;
void time_commands(std::vector<TimedCommand>& cmds, int reps, int timeout_ms, const Runner& run);

BenchReport launch_report(const std::vector<TimedCommand>& cmds, int reps);

BenchReport run_launch_bench(const LaunchBenchOptions& o);

}  // namespace mtrain::bench
