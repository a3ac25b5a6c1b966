#pragma once
// One folder per run of the bundled trainer (in core: the trainer writes it, `mtrain runs` reads it), so runs into one work dir never overwrite each
// other (MMEngine's convention):
//   work_dir/
//     20261123_150401/        run.json (written at start), metrics.jsonl, summary.json (at the end)
//     20261123_151210/        the next run (a resumed one too: its metrics start at the resumed step)
//     latest -> 20261123_151210
//     metrics.jsonl -> latest/metrics.jsonl, summary.json -> latest/summary.json (for readers of
//                              the single-run layout)
//     checkpoints/            shared by all runs, so `--resume auto` finds the newest
//     model.pt                the last finished run's weights
#include <ctime>
#include <string>

#include <nlohmann/json.hpp>

namespace mtrain::runs {

// "20261123_150401" (local time, as MMEngine names them).
std::string run_folder_name(std::time_t t);

// True for names run_folder_name makes (with an optional "_N" for runs started in one second).
bool is_run_folder_name(const std::string& name);

// Creates work_dir/<name> (a new name if that second is taken: _1, _2, …), writes run.json
// ({"started": epoch seconds, "started_text", "pid", "host"} merged with `info`), and points
// `latest`, metrics.jsonl and summary.json of work_dir at it. Returns the folder's path. Throws
// mtrain::Error naming train.work_dir when it cannot.
std::string start_run_folder(const std::string& work_dir, const nlohmann::json& info, std::time_t now);

}  // namespace mtrain::runs
