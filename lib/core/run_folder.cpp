#include "lib/core/run_folder.hpp"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace fs = std::filesystem;

namespace mtrain::runs {

namespace {

// Points `link` at `target` atomically (a new link renamed over the old one); an existing
// regular file of the old single-run layout is kept beside it as <name>.old.
void point(const fs::path& link, const std::string& target) {
  std::error_code ec;
  const auto st = fs::symlink_status(link, ec);
  if (fs::exists(st) && !fs::is_symlink(st)) fs::rename(link, link.string() + ".old", ec);
  const fs::path tmp = link.string() + fmt::format(".tmp{}", getpid());
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) fs::remove(tmp, ec);  // best effort: the run folder itself is what matters
}

}  // namespace

std::string run_folder_name(std::time_t t) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d_%H%M%S", &tm);
  return buf;
}

bool is_run_folder_name(const std::string& n) {
  if (n.size() < 15 || n[8] != '_') return false;
  for (size_t i = 0; i < 15; ++i)
    if (i != 8 && !std::isdigit(static_cast<unsigned char>(n[i]))) return false;
  if (n.size() == 15) return true;
  if (n[15] != '_' || n.size() == 16) return false;
  for (size_t i = 16; i < n.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(n[i]))) return false;
  return true;
}

std::string start_run_folder(const std::string& work_dir, const nlohmann::json& info, std::time_t now) {
  const fs::path wd(work_dir);
  std::error_code ec;
  fs::create_directories(wd, ec);
  const std::string base = run_folder_name(now);
  std::string name = base;
  // create_directory is the claim: false when the folder exists (another run of this second).
  for (int k = 1; !fs::create_directory(wd / name, ec); ++k) {
    if (ec || k > 1000)
      throw Error(fmt::format("cannot create a run folder in train.work_dir '{}': {}", work_dir,
                              ec ? ec.message() : "too many runs in one second"),
                  "Check that train.work_dir is writable.", kExitFailure);
    name = fmt::format("{}_{}", base, k);
  }
  nlohmann::json run = info;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  run["started"] = static_cast<long long>(now);
  run["started_text"] = name.substr(0, 15);
  run["pid"] = static_cast<long long>(getpid());
  run["host"] = host;
  std::ofstream(wd / name / "run.json") << run.dump(2) << "\n";
  point(wd / "latest", name);
  point(wd / "metrics.jsonl", "latest/metrics.jsonl");
  point(wd / "summary.json", "latest/summary.json");
  return (wd / name).string();
}

}  // namespace mtrain::runs
