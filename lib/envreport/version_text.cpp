// `mtrain --version`: this binary's version and git revision, and the LibTorch the bundled
// trainer was built against. mtrain links no LibTorch, so the worker is asked (`mtrain-worker
// build-info`, the same probe `mtrain env` uses); only --version pays for that start-up.
#include <fmt/format.h>

#include "mtrain/envreport/report.hpp"

namespace mtrain::envreport {

std::string version_text(const std::string& version, const std::string& revision, const json& worker) {
  std::string t = fmt::format("mtrain {} (git {})\n", version, revision.empty() ? "unknown" : revision);
  if (worker.contains("build") && worker["build"].is_object() && worker["build"].contains("libtorch")) {
    t += fmt::format("LibTorch {} (mtrain-worker {})", worker["build"]["libtorch"].get<std::string>(),
                     worker["path"].get<std::string>());
  } else {
    t += "LibTorch unknown: " + (worker.contains("error") ? worker["error"].get<std::string>() : std::string("no answer"));
  }
  return t;  // CLI11 adds the final newline
}

}  // namespace mtrain::envreport
