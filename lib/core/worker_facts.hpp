#pragma once
// The build facts of an mtrain-worker, recorded beside it when it is built (`mtrain-worker
// build-info --facts`): <worker>.facts.json — the LibTorch version, CUDA/NCCL compiled in and
// their versions, the newest TorchScript file format it reads, and how it was built (source
// folder, LibTorch line, the Python whose torch it linked) — and <worker>.operators, every
// operator its LibTorch registers, one per line. `mtrain` links no LibTorch: it reads these
// instead of starting the worker (`--version`, `env`, the model check before any rank starts).
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>

namespace mtrain {

struct WorkerFacts {
  std::string file;             // the facts file read
  std::string libtorch;         // "2.15.0", "1.13.1"
  bool cuda = false;
  std::string cuda_version;     // compiled against ("13.0"), "" without CUDA
  bool nccl = false;
  std::string nccl_version;
  int64_t file_format_max = -1;
  std::string torch_line;       // "system" or "python" (cmake/torch.cmake)
  std::string torch_python;     // the interpreter whose torch matches this worker
  std::string source_dir;       // the checkout it was built from
  // "LibTorch 2.15.0, CUDA 13.0, NCCL 2.30.7" / "LibTorch 1.13.1 (CPU)".
  std::string describe() const;
  // The command that builds mtrain against the user's own PyTorch (the python3 on PATH).
  std::string build_against_python_command() const;
};

std::string worker_facts_path(const std::string& worker);      // <worker>.facts.json
std::string worker_operators_path(const std::string& facts);    // <worker>.operators, from either

// nullopt when the file is absent (a worker built before facts were recorded); throws
// mtrain::Error when it is present but unreadable.
std::optional<WorkerFacts> read_worker_facts(const std::string& worker);

// The facts of the worker this process is (/proc/self/exe), or nullopt.
std::optional<WorkerFacts> own_worker_facts();

// The operator list beside `worker`; empty when absent.
std::unordered_set<std::string> read_worker_operators(const std::string& worker);

}  // namespace mtrain
