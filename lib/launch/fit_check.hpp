#pragma once
// Will it fit, asked before any rank of the bundled trainer starts (lib/estimate): the job's
// estimate on the plan's world against each rank's memory. `--strategy auto` becomes the fastest
// strategy that fits (said in one line on stderr, and recorded in the run folder's
// estimate.json); a job whose own strategy does not fit is refused with a paragraph naming the
// two cheapest changes that would make it fit (exit 2), unless --force.
#include <string>

#include "mtrain/launch/launch.hpp"

namespace mtrain::launch {

struct FitRecord {
  std::string estimate_json;  // for <run folder>/estimate.json; "" = no estimate was made
};

// Updates opt.job_spec_json when the strategy was auto. world / ranks_per_node: the plan's.
FitRecord check_fit(LaunchOptions& opt, int world, int ranks_per_node);

}  // namespace mtrain::launch
