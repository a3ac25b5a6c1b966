// `mtrain --version`: this binary's version and git revision, and the LibTorch the bundled
// trainer was built against, with whether CUDA and NCCL are compiled in. mtrain links no
// LibTorch: it reads the worker's build facts, recorded beside it at build time
// (core/worker_facts.hpp), and asks the worker itself (`mtrain-worker build-info`, the probe
// `mtrain env` uses) only when a worker has no facts file.
#include <fmt/format.h>

#include "lib/envreport/report.hpp"

namespace mtrain::envreport {

json worker_from_facts(const std::string& worker_path, const WorkerFacts& f) {
  auto opt = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  return {{"path", worker_path},
          {"found", true},
          {"facts", f.file},
          {"build",
           {{"libtorch", f.libtorch},
            {"cuda", {{"compiled", f.cuda}, {"version", opt(f.cuda_version)}}},
            {"nccl", {{"compiled", f.nccl}, {"version", opt(f.nccl_version)}}},
            {"gloo", true}}}};
}

std::string version_text(const std::string& version, const std::string& revision, const json& worker) {
  std::string t = fmt::format("mtrain {} (git {})\n", version, revision.empty() ? "unknown" : revision);
  if (worker.contains("build") && worker["build"].is_object() && worker["build"].contains("libtorch")) {
    const json& b = worker["build"];
    auto compiled = [&](const char* k) { return b.contains(k) && b[k].value("compiled", false); };
    auto ver = [&](const char* k) {
      return b[k].contains("version") && b[k]["version"].is_string() ? " " + b[k]["version"].get<std::string>() : std::string();
    };
    std::string devices;
    if (compiled("cuda"))
      devices = fmt::format("CUDA{} and {} compiled in", ver("cuda"), compiled("nccl") ? "NCCL" + ver("nccl") : "no NCCL");
    else
      devices = "CPU only: no CUDA, no NCCL";
    t += fmt::format("LibTorch {} ({}; mtrain-worker {})", b["libtorch"].get<std::string>(), devices,
                     worker["path"].get<std::string>());
  } else {
    t += "LibTorch unknown: " + (worker.contains("error") ? worker["error"].get<std::string>() : std::string("no answer"));
  }
  return t;  // CLI11 adds the final newline
}

}  // namespace mtrain::envreport
