// `mtrain-worker build-info`: what LibTorch, CUDA and NCCL this worker was compiled against, for
// `mtrain env` (mtrain itself links no LibTorch, so it asks the worker); `build-info --facts FILE`
// writes the same build facts plus every operator this LibTorch registers, once, at build time
// (the launcher reads that file instead of starting the worker: `mtrain --version`, and the
// TorchScript compatibility check before any rank starts, docs/architecture.md §9).
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <caffe2/serialize/versions.h>
#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <cstdio>
#include <cstring>
#include <set>

#include <fstream>
#include <ostream>
#include <string>

#include <fmt/format.h>

#include "lib/core/atomic_file.hpp"
#include "lib/core/error.hpp"
#include "lib/core/worker_facts.hpp"
#include "lib/trainer/bench/build_info.hpp"
#include "lib/trainer/comm/compat.hpp"

namespace mtrain::trainer {

namespace {

// The BLAS library this process actually mapped: Debian's LibTorch calls whatever
// libblas.so.3 the alternatives system points at (netlib's reference BLAS unless OpenBLAS or
// BLIS is installed), so only the loaded file says which one trains. First mapped file whose
// name looks like a BLAS, else "".
std::string loaded_blas() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string base = path.substr(path.rfind('/') + 1);
    if (base.rfind("libblas.so", 0) == 0 || base.rfind("libopenblas", 0) == 0 ||
        base.rfind("libblis", 0) == 0 || base.rfind("libmkl_rt", 0) == 0) {
      return path;
    }
  }
  return "";
}

// Replaced whole: a reader (`mtrain --version`) sees the old file or the new one.
void replace_file(const std::string& path, const std::string& text) {
  if (const int err = replace_file_atomically(path, text); err != 0)
    throw RuntimeFailure(fmt::format("cannot write {}: {}", path, std::strerror(err)));
}

}  // namespace

nlohmann::json build_facts() {
  using nlohmann::json;
  json cuda = {{"compiled", false}, {"version", nullptr}};
  json nccl = {{"compiled", compat::nccl_available()}, {"version", nullptr}};
  if (const std::string v = compat::cuda_compiled_version(); !v.empty()) {
    cuda["compiled"] = true;
    cuda["version"] = v;
    nccl["version"] = compat::nccl_version();
  }
  return {{"libtorch", TORCH_VERSION},
          {"cuda", cuda},
          {"nccl", nccl},
          {"gloo", true},
          {"file_format_max", static_cast<int64_t>(caffe2::serialize::kMaxSupportedFileFormatVersion)}};
}

nlohmann::json build_info() {
  nlohmann::json info = build_facts();
  info["cuda"]["devices"] = compat::cuda_device_count();
  info["threads"] = at::get_num_threads();
  info["blas"] = loaded_blas();
  return info;
}

std::vector<std::string> registered_operators() {
  std::set<std::string> names;  // sorted: the facts file is the same for the same LibTorch
  for (const auto& op : torch::jit::getAllOperators()) names.insert(op->schema().name());
  for (const auto& n : c10::Dispatcher::singleton().getAllOpNames()) names.insert(n.name);
  return {names.begin(), names.end()};
}

int run_build_info_command(const std::vector<std::string>& args, const std::string& usage, std::ostream& out) {
  if (args.empty()) {
    out << build_info().dump() << std::endl;
    return 0;
  }
  // Build time: the facts file beside the worker, with what CMake knows about the build (source
  // folder, LibTorch line, the matching Python) as key=value pairs.
  std::string facts_path;
  nlohmann::json facts = build_facts();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--facts" && i + 1 < args.size()) {
      facts_path = args[++i];
    } else if (a == "--set" && i + 1 < args.size()) {
      const std::string& kv = args[++i];
      const auto eq = kv.find('=');
      if (eq == std::string::npos) throw UsageError("--set needs key=value, got '" + kv + "'");
      facts["build"][kv.substr(0, eq)] = kv.substr(eq + 1);
    } else {
      throw UsageError("unexpected argument '" + a + "'", usage);
    }
  }
  if (facts_path.empty()) throw UsageError("build-info options need --facts FILE", usage);
  // Two files: the small JSON (read by every `mtrain --version`) and the operator list, one
  // name a line (read only to check a TorchScript model).
  std::string ops;
  for (const auto& op : registered_operators()) ops += op + "\n";
  replace_file(worker_operators_path(facts_path), ops);
  replace_file(facts_path, facts.dump(1) + "\n");
  return 0;
}

}  // namespace mtrain::trainer
