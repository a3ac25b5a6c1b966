#pragma once
// The bundled trainer's job checked against this machine and the planned world, by the launcher
// before any rank starts: mistakes that would otherwise surface only inside the ranks after
// start-up (a missing data path, an unwritable work dir, a global batch the world cannot split,
// --resume of a folder that holds no complete checkpoint) become one paragraph and exit 2.
#include <vector>

#include "lib/config/cross_checks.hpp"

namespace mtrain::config {

// train.work_dir: an existing folder this user can write into, or one that can be created
// (its nearest existing parent is a writable folder).
std::vector<Problem> work_dir_problems(const json& job);

// checkpoint.resume PATH (not "" or "auto"): a step_<N> folder with manifest.json and the
// COMPLETE marker the trainer writes last. (The ranks still verify every file's checksum.)
std::vector<Problem> resume_problems(const json& job);

// A fresh run (checkpoint.resume empty, checkpoint.overwrite off) in a work dir whose checkpoints/
// holds a complete step_<N> of an earlier run: refused, so two runs never mix (issue 45).
std::vector<Problem> earlier_run_problems(const json& job);

// Every problem above, the data checks (data_checks.hpp, on disk) and batch_problems(job, world) (world 0: not known
// before the rendezvous; then earlier_run_problems is left to the trainer's rank 0, since a joining
// node may scale up a running job whose checkpoints they are), as one mtrain::Error (exit 2). `job` is the job spec the ranks get.
void check_before_launch(const json& job, long long world);

}  // namespace mtrain::config
