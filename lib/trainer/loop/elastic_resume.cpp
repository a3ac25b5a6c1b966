#include "lib/trainer/loop/elastic_resume.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include "lib/config/elastic_batch.hpp"
#include "lib/core/atomic_file.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::trainer {

namespace {
int env_count(const std::map<std::string, std::string>& env, const char* key) {
  auto it = env.find(key);
  if (it == env.end()) return 0;
  auto v = str::parse_uint(it->second);
  return v && *v < (1LL << 30) ? static_cast<int>(*v) : 0;
}
}  // namespace

RestartInfo restart_info_from_env(const std::map<std::string, std::string>& env) {
  RestartInfo r;
  r.restart_count = env_count(env, "TORCHELASTIC_RESTART_COUNT");
  r.max_restarts = env_count(env, "TORCHELASTIC_MAX_RESTARTS");
  r.round = env_count(env, "MTRAIN_RDZV_ROUND");
  r.dynamic = env.count("MTRAIN_RDZV_ROUND") > 0;
  if (auto it = env.find("MTRAIN_RESTART_REASON"); it != env.end()) r.reason = it->second;
  if (auto it = env.find("MTRAIN_LOST_NODES"); it != env.end()) r.lost_nodes = it->second;
  return r;
}

std::vector<std::string> apply_restart(TrainJob& job, int world, const RestartInfo& info) {
  std::vector<std::string> notes;
  if (info.restarted() && !job.resume.given()) {
    job.resume = config::Resume::automatic();
    notes.push_back(fmt::format("Restarted job (restart {}, rendezvous round {}): resuming from the newest "
                                "complete checkpoint (checkpoint.resume auto)",
                                info.restart_count, info.round));
  }
  if (job.global_batch_size > 0) {
    const config::ElasticBatch b = config::elastic_grad_accum(job.global_batch_size, job.batch_size, world);
    if (!b.ok) {
      throw UsageError(b.problem,
                       b.valid_worlds.empty()
                           ? "set train.global_batch_size to a multiple of train.batch_size"
                           : "restart the job with one of those world sizes (nodes x ranks per node), or change "
                             "train.batch_size or train.global_batch_size");
    }
    if (b.grad_accum != job.grad_accum) {
      notes.push_back(fmt::format("train.global_batch_size {} at world size {}: grad_accum {} (was {}) x "
                                  "batch_size {}",
                                  job.global_batch_size, world, b.grad_accum, job.grad_accum, job.batch_size));
      job.grad_accum = b.grad_accum;
    }
  }
  return notes;
}

std::string reached_step_path(const std::string& work_dir) {
  return (std::filesystem::path(work_dir) / ".reached_step").string();
}

void record_reached_step(const std::string& work_dir, int64_t step) {
  // Every step: a small write and a rename, no fsync (it only feeds the "steps redone" figure).
  (void)replace_file_atomically(reached_step_path(work_dir), std::to_string(step) + "\n");
}

std::optional<int64_t> read_reached_step(const std::string& work_dir) {
  std::ifstream f(reached_step_path(work_dir));
  int64_t step = -1;
  if (!(f >> step) || step < 0) return std::nullopt;
  return step;
}

std::string restart_report(const RestartInfo& info, int64_t resumed_step, std::optional<int64_t> reached, int world) {
  std::string s = fmt::format("The job re-formed (rendezvous round {}, restart count {})", info.round,
                              info.restart_count);
  if (!info.reason.empty()) s += ": " + info.reason;
  if (!info.lost_nodes.empty()) s += "; nodes lost: " + info.lost_nodes;
  s += fmt::format("; resumed at step {} on world size {}", resumed_step, world);
  if (!reached) {
    s += "; the step the previous attempt reached is not known";
  } else if (*reached >= resumed_step) {
    s += fmt::format("; the previous attempt reached step {}: {} step{} redone", *reached, *reached - resumed_step,
                     *reached - resumed_step == 1 ? "" : "s");
  } else {
    s += fmt::format("; the previous attempt reached step {} (before this checkpoint): no steps redone", *reached);
  }
  return s;
}

}  // namespace mtrain::trainer
