#pragma once
// Scale up under the dynamic rendezvous (--nnodes MIN:MAX, docs/multinode.md "Restarts"): a node
// that arrives while the job runs with fewer than MAX nodes makes the store open a new round at
// once — a membership change, not a failure: the restart count stays. How each node's ranks
// leave the old round is this node's --scale-up:
//   checkpoint (default)  the preemption notice (SIGUSR1): the bundled trainer agrees on a step,
//                         saves a checkpoint and exits, so the new round resumes with nothing lost;
//                         ranks still running after the notice grace are torn down as usual
//   now                   torn down at once (SIGTERM, SIGKILL after --grace-period), torchrun's
//                         behaviour: no notice and no wait for a step boundary. A program that
//                         does not save on SIGTERM redoes the work since its last checkpoint; the
//                         bundled trainer treats SIGTERM as a stop request and still saves when
//                         every rank is alive (tests/e2e/elastic/test_elastic_scale_up_now.sh)
//   off                   the store does not re-form for arrivals: a new node waits for the next
//                         round (a failure), as before scale up existed
// A failure always tears the ranks down at once, whatever the mode.
#include "lib/config/launch_choices.hpp"

namespace mtrain::launch {

// launch.scale_up, with its name table in lib/config/launch_choices.hpp.
using config::ScaleUp;

// Whether the store this node holds opens a round for an arriving node.
bool store_scales_up(ScaleUp mode, bool elastic_nnodes);

// The signal this node's ranks get when their round ends (0: tear down at once).
int round_end_notice(ScaleUp mode, bool membership_change);

}  // namespace mtrain::launch
