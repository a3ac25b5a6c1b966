#include "lib/core/worker_facts.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/error.hpp"
#include "lib/core/input_limits.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/own_executable.hpp"

namespace mtrain {

std::string WorkerFacts::describe() const {
  if (!cuda) return fmt::format("LibTorch {} (CPU)", libtorch);
  return fmt::format("LibTorch {}, CUDA {}{}", libtorch, cuda_version.empty() ? "?" : cuda_version,
                     nccl ? ", NCCL " + (nccl_version.empty() ? std::string("?") : nccl_version) : std::string());
}

std::string WorkerFacts::build_against_python_command() const {
  const std::string src = source_dir.empty() ? std::string("<mtrain checkout>") : source_dir;
  return fmt::format("MTRAIN_PYTHON=$(command -v python3) {}/scripts/bootstrap --torch python {}/build-torch2", src, src);
}

std::optional<WorkerFacts> own_worker_facts() {
  const std::string self = own_executable();
  if (self.empty()) return std::nullopt;
  try {
    return read_worker_facts(self);
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::string worker_facts_path(const std::string& worker) {
  return str::ends_with(worker, ".facts.json") ? worker : worker + ".facts.json";
}

std::string worker_operators_path(const std::string& facts) {
  const std::string f = worker_facts_path(facts);
  return f.substr(0, f.size() - std::string(".facts.json").size()) + ".operators";
}

std::optional<WorkerFacts> read_worker_facts(const std::string& worker) {
  const std::string path = worker_facts_path(worker);
  auto text = read_input_file(path);
  if (!text) return std::nullopt;
  WorkerFacts f;
  f.file = path;
  try {
    const auto j = nlohmann::json::parse(*text);
    auto s = [&](const nlohmann::json& o, const char* k) {
      return o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
    };
    f.libtorch = s(j, "libtorch");
    f.cuda = j.at("cuda").at("compiled").get<bool>();
    f.cuda_version = s(j["cuda"], "version");
    f.nccl = j.at("nccl").at("compiled").get<bool>();
    f.nccl_version = s(j["nccl"], "version");
    f.file_format_max = j.value("file_format_max", int64_t{-1});
    if (j.contains("build")) {
      f.torch_line = s(j["build"], "torch_line");
      f.torch_python = s(j["build"], "torch_python");
      f.source_dir = s(j["build"], "source_dir");
    }
  } catch (const std::exception& e) {
    throw Error(fmt::format("the worker's build facts '{}' cannot be read: {}", path, e.what()),
                "rebuild mtrain-worker (the file is written when it is built), or reinstall mtrain");
  }
  return f;
}

std::unordered_set<std::string> read_worker_operators(const std::string& worker) {
  std::unordered_set<std::string> ops;
  std::ifstream in(worker_operators_path(worker));
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) ops.insert(line);
  return ops;
}

}  // namespace mtrain
