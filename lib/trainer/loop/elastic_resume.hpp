#pragma once
// What the bundled trainer does when its job was restarted (docs/multinode.md, "Restarts"):
// a rank of a restarted attempt (TORCHELASTIC_RESTART_COUNT > 0, or a rendezvous round > 0: the
// job re-formed, e.g. to take in a new node) resumes from the newest complete checkpoint by
// itself ('auto'), at whatever world size the new round has, with train.global_batch_size kept
// by recomputing the gradient accumulation (config/elastic_batch.hpp). Rank 0 says why the job
// restarted (the node agent passes the store's reason, naming a lost node, in
// MTRAIN_RESTART_REASON) and how many steps were redone: the checkpoint's step against the last
// step the previous attempt reached, which rank 0 records in work_dir/.reached_step after every
// step of an elastic job (TORCHELASTIC_MAX_RESTARTS > 0, or the dynamic rendezvous).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/trainer/loop/train_job.hpp"

namespace mtrain::trainer {

struct RestartInfo {
  int restart_count = 0;   // TORCHELASTIC_RESTART_COUNT
  int max_restarts = 0;    // TORCHELASTIC_MAX_RESTARTS
  int round = 0;           // MTRAIN_RDZV_ROUND: the rendezvous round of this attempt
  bool dynamic = false;    // MTRAIN_RDZV_ROUND is set: nodes may come and go (--rdzv-backend mtrain)
  std::string reason;      // MTRAIN_RESTART_REASON: why the previous round ended
  std::string lost_nodes;  // MTRAIN_LOST_NODES: nodes lost over the job's life, comma-separated
  bool restarted() const { return restart_count > 0 || round > 0; }
  bool elastic() const { return max_restarts > 0 || dynamic; }
};

// From the worker's environment (absent or malformed values count as 0 / empty).
RestartInfo restart_info_from_env(const std::map<std::string, std::string>& env);

// Adjusts the job for this attempt at `world` ranks: 'auto' resume when restarted and no resume
// was asked for; grad_accum from train.global_batch_size when it is set. Throws mtrain::Error
// naming the valid world sizes when `world` cannot keep the global batch. Returns the notices
// rank 0 prints (what was changed and why).
std::vector<std::string> apply_restart(TrainJob& job, int world, const RestartInfo& info);

// work_dir/.reached_step: the last step an attempt completed (not durable: a hint for the log).
std::string reached_step_path(const std::string& work_dir);
void record_reached_step(const std::string& work_dir, int64_t step);
std::optional<int64_t> read_reached_step(const std::string& work_dir);

// The line rank 0 prints after resuming in a restarted attempt, e.g.
// "The job re-formed (rendezvous round 1, restart count 1): node 'n2' (node rank 2) stopped
// sending heartbeats (…); resumed at step 8 on world size 2; the previous attempt reached step
// 11: 3 steps redone".
std::string restart_report(const RestartInfo& info, int64_t resumed_step, std::optional<int64_t> reached, int world);

}  // namespace mtrain::trainer
