#include "lib/launch/export_command.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/own_executable.hpp"
#include "lib/core/visible_text.hpp"
#include "lib/launch/launch.hpp"

namespace mtrain::launch {

namespace fs = std::filesystem;

std::string find_exporter_dir(const std::string& self_exe, const std::optional<WorkerFacts>& facts) {
  std::vector<fs::path> candidates = {fs::path(self_exe).parent_path() / ".." / "share" / "mtrain" / "python"};
  if (facts && !facts->source_dir.empty()) candidates.push_back(fs::path(facts->source_dir) / "python");
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(dir / "mtrain_export" / "__main__.py", ec)) return fs::weakly_canonical(dir, ec).string();
  }
  return "";
}

std::string exporter_python(const std::string& flag, const std::string& env_python,
                            const std::optional<WorkerFacts>& facts) {
  if (!flag.empty()) return flag;
  if (!env_python.empty()) return env_python;
  if (facts && !facts->torch_python.empty()) return facts->torch_python;
  return "python3";
}

ExportExec export_exec(const std::string& python, const std::string& exporter_dir, const std::vector<std::string>& args,
                       const std::string& old_pythonpath) {
  ExportExec e;
  e.argv = {python, "-m", "mtrain_export"};
  e.argv.insert(e.argv.end(), args.begin(), args.end());
  e.pythonpath = old_pythonpath.empty() ? exporter_dir : exporter_dir + ":" + old_pythonpath;
  return e;
}

void run_export(const ExportRequest& r) {
  const std::string self = own_executable();
  const std::string worker = find_worker(self);
  const std::optional<WorkerFacts> facts = worker.empty() ? std::nullopt : read_worker_facts(worker);
  const std::string dir = find_exporter_dir(self, facts);
  if (dir.empty())
    throw UsageError(fmt::format("no exporter (mtrain_export) beside this mtrain ({}): neither "
                                 "<prefix>/share/mtrain/python nor the checkout its worker was built from holds it",
                                 visible_text(self)),
                     "Install mtrain whole (the .deb), or run the exporter from a checkout: PYTHONPATH=python "
                     "python -m mtrain_export …");
  const char* env_python = std::getenv("MTRAIN_PYTHON");
  const std::string python = exporter_python(r.python, env_python ? env_python : "", facts);
  const char* old = std::getenv("PYTHONPATH");
  const ExportExec e = export_exec(python, dir, r.args, old ? old : "");
  ::setenv("PYTHONPATH", e.pythonpath.c_str(), 1);
  std::vector<char*> argv;
  argv.reserve(e.argv.size() + 1);
  for (const std::string& a : e.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  throw UsageError(fmt::format("cannot run the Python interpreter '{}' for the exporter: {}", visible_text(python),
                               std::strerror(errno)),
                   "Give a Python with PyTorch 2.x (the one this mtrain's worker was built with): --python PATH or "
                   "MTRAIN_PYTHON=PATH.");
}

}  // namespace mtrain::launch
