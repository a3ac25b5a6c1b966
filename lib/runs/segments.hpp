#pragma once
// A run as its user thinks of it: the launches of one training, joined. Each launch of the
// bundled trainer has its own folder (lib/core/run_folder.hpp), so a run stopped by Ctrl-C or
// preemption and continued with `--resume auto` is two folders; the second's run.json says where
// it started ("start_step" > 0: the step of the checkpoint it resumed). A folder that resumed is
// the continuation of the newest earlier run in the same work dir, provided that run reached its
// start step (a fresh run beside another run's checkpoints is refused by the launch, issue 45, so
// the checkpoint it resumed is that run's).
#include <string>
#include <vector>

#include "lib/runs/catalog.hpp"

namespace mtrain::runs {

// `runs` (oldest first) with every resumed launch joined onto the run it continues: one Run with
// `segments` listing the launches, the newest launch's figures (strategy, world, steps, losses,
// state), the durations summed, and one curve (the earlier launch's points past the step the next
// resumed at were trained again, and are replaced by the next launch's). Order is kept: a joined
// run stands where its first launch stood.
std::vector<Run> join_segments(std::vector<Run> runs);

// Optimizer steps the run's launches trained (steps redone after a resume count again).
long long steps_run(const Run& r);

// What the STEPS column adds after "reached/total": "" for a run of one launch from step 0,
// " (2 segments: 27 + 23 steps)" for a joined one, " (from step 27)" for a lone resumed launch.
std::string segments_note(const Run& r);

}  // namespace mtrain::runs
