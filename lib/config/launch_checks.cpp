#include "lib/config/launch_checks.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "lib/config/data_checks.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/config/job_view.hpp"

namespace fs = std::filesystem;

namespace mtrain::config {

std::vector<Problem> work_dir_problems(const json& job) {
  const std::string dir = job_view(job).work_dir;
  const char* hint = "Set train.work_dir (--work-dir, or train: work_dir: in the job file) to a folder you can write.";
  if (dir.empty()) return {{true, {"train.work_dir"}, "train.work_dir is empty", hint}};
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  // The nearest existing folder on the way: the work dir itself, or the parent it is created in.
  fs::path existing = p;
  while (!existing.empty() && !fs::exists(existing, ec) && existing != existing.parent_path())
    existing = existing.parent_path();
  const bool is_self = existing == p;
  if (!fs::is_directory(existing, ec))
    return {{true, {"train.work_dir"},
             fmt::format("train.work_dir '{}' cannot be created: '{}' is not a folder", dir, existing.string()), hint}};
  if (access(existing.c_str(), W_OK | X_OK) != 0)
    return {{true, {"train.work_dir"},
             is_self ? fmt::format("train.work_dir '{}' is not writable by you", dir)
                     : fmt::format("train.work_dir '{}' cannot be created: '{}' is not writable by you", dir,
                                   existing.string()),
             hint}};
  return {};
}

std::vector<Problem> resume_problems(const json& job) {
  const JobView v = job_view(job);
  if (v.resume.kind != Resume::Kind::Path) return {};  // none, or auto: the trainer finds the newest
  const std::string& spec = v.resume.path;
  std::error_code ec;
  const fs::path p(spec);
  const std::string hint = fmt::format(
      "Give a step_<N> folder that has COMPLETE (see `mtrain checkpoint inspect DIR`), or --resume auto for the "
      "newest complete checkpoint in {}/checkpoints.",
      v.work_dir);
  if (!fs::exists(p, ec)) return {{true, {"checkpoint.resume"}, fmt::format("--resume '{}' does not exist", spec), hint}};
  if (!fs::is_directory(p, ec))
    return {{true, {"checkpoint.resume"}, fmt::format("--resume '{}' is not a checkpoint folder", spec), hint}};
  if (!fs::exists(p / "manifest.json", ec) || !fs::exists(p / "COMPLETE", ec)) {
    const bool has_steps = [&] {
      for (const auto& e : fs::directory_iterator(p, ec))
        if (str::starts_with(e.path().filename().string(), "step_")) return true;
      return false;
    }();
    return {{true, {"checkpoint.resume"},
             has_steps ? fmt::format("--resume '{}' is a folder of checkpoints, not one checkpoint", spec)
                       : fmt::format("--resume '{}' holds no complete checkpoint ({} is missing: the save was "
                                     "interrupted, or this is not a checkpoint)",
                                     spec, fs::exists(p / "manifest.json", ec) ? "COMPLETE" : "manifest.json"),
             hint}};
  }
  return {};
}

std::vector<Problem> earlier_run_problems(const json& job) {
  const JobView v = job_view(job);
  if (v.resume.given() || v.checkpoint_overwrite) return {};
  const std::string& dir = v.work_dir;
  std::error_code ec;
  std::vector<std::pair<long long, std::string>> steps;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "checkpoints", ec)) {
    const std::string name = e.path().filename().string();
    const auto n = str::starts_with(name, "step_") ? str::parse_uint(name.substr(5)) : std::nullopt;
    if (n && fs::exists(e.path() / "COMPLETE", ec)) steps.emplace_back(*n, name);
  }
  if (steps.empty()) return {};
  std::sort(steps.rbegin(), steps.rend());
  std::vector<std::string> names;
  for (size_t i = 0; i < steps.size() && i < 3; ++i) names.push_back(steps[i].second);
  if (steps.size() > 3) names.push_back("…");
  return {{true, {"train.work_dir", "checkpoint.resume", "checkpoint.overwrite"},
           fmt::format("train.work_dir '{}' holds another run's checkpoints ({}) and this run would start afresh "
                       "beside them (a later --resume auto would pick whichever step is newest, of either run)",
                       dir, str::join(names, ", ")),
           fmt::format("Continue that run with --resume auto (from step {}; raise --max-steps to train further), "
                       "train into a fresh --work-dir, or pass --overwrite (checkpoint.overwrite: true) to remove its "
                       "checkpoints and start afresh.",
                       steps.front().first)}};
}

void check_before_launch(const json& job, long long world) {
  std::vector<Problem> all;
  for (auto* f : {&data_model_problems, &work_dir_problems, &resume_problems})
    for (auto& p : f(job)) all.push_back(std::move(p));
  // A node that joins through the rendezvous (world 0) may be scaling up a running job, whose
  // checkpoints these are: there rank 0 checks when a fresh run starts (trainer/loop/worker.cpp).
  if (world > 0)
    for (auto& p : earlier_run_problems(job)) all.push_back(std::move(p));
  for (auto& p : data_file_problems(job, true)) all.push_back(std::move(p));
  for (auto& p : batch_problems(job, world)) all.push_back(std::move(p));
  std::vector<std::string> lines;
  const Problem* first = nullptr;
  for (const auto& p : all)
    if (p.error) {
      lines.push_back(p.message + ". " + p.hint);
      if (!first) first = &p;
    }
  if (lines.size() == 1) throw Error(first->message + " (nothing was started)", first->hint);
  if (!lines.empty())
    throw Error(fmt::format("the job cannot start (nothing was started):\n  {}", str::join(lines, "\n  ")));
}

}  // namespace mtrain::config
