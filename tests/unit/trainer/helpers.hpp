#pragma once
// Shared by the checkpoint tests: small jobs run on thread ranks, a byte-counting CPU allocator.
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <unordered_map>
#include <sstream>
#include <string>

#include <c10/core/CPUAllocator.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "lib/trainer/comm/compat.hpp"
#include "lib/config/registry.hpp"
#include "lib/trainer/checkpoint/shard_io.hpp"
#include "lib/trainer/loop/trainer.hpp"
#include "unit/trainer/ranks.hpp"
#include "temp_dir.hpp"

namespace mtrain::trainer::testing {

namespace fs = std::filesystem;
using nlohmann::json;

using ::mtrain::testing::fresh_dir;

// A small job: gpt (or mlp) with a few hundred thousand parameters at most.
inline json small_job(const fs::path& work_dir, const std::string& model = "gpt") {
  json j = mtrain::config::job_registry().defaults();
  using mtrain::config::set;
  set(j, "model.name", model);
  if (model == "gpt") {
    set(j, "model.n_layer", 2);
    set(j, "model.n_head", 2);
    set(j, "model.n_embd", 32);
    set(j, "model.block_size", 16);
    set(j, "model.vocab_size", 256);  // the text data is byte-level
  } else {
    set(j, "model.hidden", 32);
    set(j, "model.depth", 2);
    set(j, "model.input_dim", 8);
  }
  set(j, "data.num_samples", 512);
  set(j, "train.batch_size", 4);
  set(j, "train.max_steps", 12);
  set(j, "train.log_interval", 4);
  set(j, "checkpoint.interval", 4);
  set(j, "train.work_dir", work_dir.string());
  return j;
}

inline TrainerParts parts_for(const json& j) {
  const TrainJob tj = train_job_from_json(j);
  const ModelSpec& ms = tj.model;
  const DataSpec& ds = tj.data;
  TrainerParts p;
  p.model = make_model(ms, 5);
  p.train = make_dataset(ds, ms, Split::Train, 5);
  return p;
}

// Runs the job on `world` thread ranks; rank 0's result and console text.
inline TrainResult run_job(const json& j, int world, std::string* console = nullptr,
                           const std::function<void(TrainerParts&)>& adjust = {}) {
  TrainResult r0;
  std::ostringstream out0;
  run_ranks(world, [&](Communicator& comm) {
    std::ostringstream sink;
    auto parts = parts_for(j);
    if (adjust) adjust(parts);
    auto r = train(train_job_from_json(j), comm, parts, comm.rank() == 0 ? out0 : sink);
    if (comm.rank() == 0) r0 = r;
  });
  if (console) *console = out0.str();
  return r0;
}

inline std::map<std::string, at::Tensor> load_dict(const fs::path& p) {
  std::map<std::string, at::Tensor> m;
  for (auto& [k, v] : read_tensor_dict(p.string())) m[k] = v;
  return m;
}

inline json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// Flips one byte in the middle of a file.
inline void flip_byte(const fs::path& p) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  const auto size = fs::file_size(p);
  f.seekg(static_cast<std::streamoff>(size / 2));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5A);
  f.seekp(static_cast<std::streamoff>(size / 2));
  f.write(&c, 1);
}

// Counts the bytes the CPU allocator has handed out and not yet freed (live) and their peak.
// Installed once over the default allocator (counting_allocator()) and left in place: tensors
// it allocated may be freed at any later time.
class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) {
    inner_ = inner;
    inner_free_ = inner->raw_deleter();  // the default CPU allocator's data == context
  }

  // data == context, as raw_allocate() callers require; sizes are looked up on free.
  c10::DataPtr allocate(size_t n) MTRAIN_ALLOCATE_CONST override {
    void* p = inner_->raw_allocate(n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      sizes_[p] = n;
    }
    const int64_t now = live_.fetch_add(static_cast<int64_t>(n)) + static_cast<int64_t>(n);
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    return {p, p, &release, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  // LibTorch 2.x makes this pure virtual; 1.13 does not have it (then it is just a method).
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }

  int64_t live() const { return live_.load(); }
  int64_t peak() const { return peak_.load(); }
  void reset_peak() { peak_.store(live_.load()); }

 private:
  static void release(void* p) {
    if (p == nullptr) return;
    size_t n = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = sizes_.find(p);
      if (it != sizes_.end()) {
        n = it->second;
        sizes_.erase(it);
      }
    }
    live_.fetch_sub(static_cast<int64_t>(n));
    inner_free_(p);
  }
  static inline c10::Allocator* inner_ = nullptr;
  static inline c10::DeleterFnPtr inner_free_ = nullptr;
  static inline std::mutex mu_;
  static inline std::unordered_map<void*, size_t> sizes_;
  static inline std::atomic<int64_t> live_{0};
  static inline std::atomic<int64_t> peak_{0};
};

inline CountingAllocator& counting_allocator() {
  static CountingAllocator* a = [] {
    auto* c = new CountingAllocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(c, /*priority=*/100);
    return c;
  }();
  return *a;
}

}  // namespace mtrain::trainer::testing
