#pragma once
// A job id is a name (issue 17, item 8): it becomes a folder name under --log-dir and
// TMPDIR, part of the rendezvous run id and of every rank's environment. `../../x` created
// folders outside the log dir. One check for every way an id arrives (--job-id, MTRAIN_JOB_ID,
// the Slurm default slurm-$SLURM_JOB_ID[.$SLURM_STEP_ID], --rdzv-id used as the job id).
#include <string>

namespace mtrain::launch {

constexpr std::size_t kMaxJobIdLength = 128;

// Empty if `id` is a valid job id, else why not: 1–128 characters from letters, digits,
// '.', '_' and '-', starting with a letter or a digit (so never '.', '..' or an option).
std::string job_id_problem(const std::string& id);

// Throws mtrain::Error (exit 2) naming `id`, where it came from (`source`) and the rule.
void check_job_id(const std::string& id, const std::string& source);

}  // namespace mtrain::launch
