#pragma once
// Checks that involve more than one setting (each value alone was already checked by the
// registry): batch arithmetic, strategy against its knobs, model shapes. They run on a resolved
// job so every value is known; provenance tells which values the user actually gave.
#include <string>
#include <vector>

#include "lib/config/registry.hpp"

namespace mtrain::config {

struct Problem {
  bool error = true;              // false: a warning (the job runs, but probably not as meant)
  std::vector<std::string> keys;  // settings involved, the one to point at first
  std::string message;
  std::string hint;
};

std::vector<Problem> cross_check(const Registry& reg, const Resolved& job);

// Ranks in the whole job when the settings fix it (numeric nproc_per_node), else 0.
long long known_world_size(const json& job);

// Whether the ranks run on this machine (launcher local, or auto without a hostfile): then the
// files they read are checked here; on ssh/Slurm nodes the launcher checks them on the node.
bool ranks_run_here(const json& job);
// launch.nnodes as a count: N, or MIN of MIN:MAX (an elastic job).
long long min_nodes(const json& job);

// Batch arithmetic against a world size (0: not known yet): global = micro x accumulation x
// world. cross_check uses the world the settings fix; the launcher the one it planned.
std::vector<Problem> batch_problems(const json& job, long long world);

}  // namespace mtrain::config
