#pragma once
// mtrain-worker's whole behaviour: read the launcher-resolved job, join the group from the
// torchrun environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; none = world 1), build the
// model and data, train.
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace mtrain::trainer {

struct WorkerOptions {
  std::string job_path;                    // --job FILE (resolved nested job JSON); "" = defaults
  std::vector<std::string> sets;           // --set key=value, applied after the file
  std::map<std::string, std::string> env;  // the rank environment (from the process environment)
};

// Reads the process environment into WorkerOptions::env (only the variables the worker uses).
std::map<std::string, std::string> worker_env_from_process();

// Returns the exit code; mtrain::Error propagates (main prints its paragraph).
int run_worker(const WorkerOptions& o, std::ostream& console);

}  // namespace mtrain::trainer
