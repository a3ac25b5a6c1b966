#pragma once
// Will it fit: per-rank bytes of every strategy for one model, world and set of settings, as a
// pure function (docs/estimate.md). Model state follows docs/architecture.md §6 (the formulas
// the trainer's memory ledger checks at every start); the transient terms (gathered units,
// unsharded gradients, reduction buckets) follow what the strategies allocate
// (lib/trainer/strategy); activations are measured by `mtrain-worker estimate-probe` (probe.hpp)
// and scaled to the requested batch; the runtime (LibTorch, allocator, communication) is measured
// by the same probe.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/core/bytes_text.hpp"
#include "lib/config/names.hpp"
#include "lib/config/sharding_choices.hpp"
#include "lib/config/train_choices.hpp"
#include "lib/config/job_view.hpp"

namespace mtrain::estimate {

struct Param {
  std::string name;
  int64_t numel = 0;
  std::string unit;  // the block (FSDP/ZeRO-3 unit) it belongs to; "" = the root unit
};

struct ModelShape {
  std::string label;  // "gpt (n_layer 32, n_head 32, n_embd 4096, block_size 2048, vocab 50304)"
  std::vector<Param> params;
  int64_t buffer_bytes = 0;
  int64_t num_params() const;
  // Elements of the largest unit (a block, or the root unit: what no block holds).
  int64_t largest_unit() const;
};

// Activations at the requested micro-batch and how they were obtained.
struct Activations {
  double bytes = 0;
  std::string how;
  bool measured = false;
  // The batch-independent part of `bytes`: autograd's gradient temporaries, the same memory the
  // sharded-gradient engines count as unsharded gradients in flight (not counted twice).
  double fixed = 0;
};

// What each rank may use.
struct Target {
  double bytes_per_rank = 0;  // 0 = unknown: nothing is judged
  std::string what;           // "NVIDIA H100 80GB HBM3, 79.6 GiB (nvidia-smi)", "host RAM 23.4 GiB / 4 ranks"
  bool gpu = false;           // state offloaded to the CPU leaves the device only on a GPU
};

// The settings that change the bytes, from a job's view (settings_from_job) or set by tests.
struct Settings {
  config::Precision precision = config::Precision::Fp32;
  int world = 1;
  int ranks_per_node = 1;  // HYBRID_SHARD's shard group
  int64_t batch = 16;      // micro-batch per rank
  bool activation_checkpointing = false;
  config::OffloadDevice zero_offload_optimizer = config::OffloadDevice::None;
  config::OffloadDevice zero_offload_param = config::OffloadDevice::None;
  bool fsdp_cpu_offload = false;
  config::ShardingStrategy fsdp_sharding = config::ShardingStrategy::FullShard;
  std::optional<config::StrategyName> strategy = config::StrategyName::Ddp;  // the job's; nullopt: auto
  double ddp_bucket_mb = 25;
  int64_t zero_reduce_bucket = 500000000;     // elements
  bool zero2_overlap = false;  // zero.overlap_comm for stage 2 ('auto': off, DeepSpeed's rule)
  int64_t zero_persistence_threshold = 100000;
  int64_t zero_max_live = 1000000000;  // elements ZeRO-3 keeps gathered in the forward
  bool memory_pool = true;
  // A TorchScript model: at the end of the run rank 0 also saves it as model.scripted.pt.
  bool scripted_export = false;
};
Settings settings_from_job(const config::JobView& job, int world, int ranks_per_node);

// One way to run the job: a strategy (fsdp with its sharding mode), with or without activation
// checkpointing and offload, and the flags that select it.
struct Candidate {
  config::StrategyName strategy = config::StrategyName::Ddp;
  config::ShardingStrategy sharding = config::ShardingStrategy::FullShard;  // fsdp only
  bool checkpointing = false;
  bool offload = false;  // zero: optimizer state to the CPU; fsdp: cpu_offload
  std::string label() const;                 // "zero3", "fsdp/SHARD_GRAD_OP", "zero2 + offload"
  std::vector<std::string> flags() const;    // {"--strategy zero3", "--set zero.offload_optimizer_device=cpu"}
};

struct Row {
  Candidate c;
  double params = 0, grads = 0, optimizer = 0;  // resident model state on the device
  double gathered = 0;     // largest gathered unit(s) and unsharded gradients in flight
  double buckets = 0;      // flat reduction / gather buffers
  double activations = 0;  // at the micro-batch (recomputed blocks: one block's worth)
  double runtime = 0;      // LibTorch, allocator, communication buffers (measured)
  double host = 0;         // offloaded to host memory (GPU targets only)
  double export_copy = 0;  // what the final export adds above the memory training freed (estimate.cpp)
  double total = 0;        // peak per rank on the device
  double comm_bytes = 0;   // sent per rank per step
  std::string comm_formula;
  double speed_cost = 0;   // relative step time, lower is faster (docs/estimate.md)
  bool fits = true;
};

// What the probe measured (probe.hpp); the estimate is pure given it.
struct Measured {
  ModelShape model;
  Activations activations;       // at Settings::batch, with and without checkpointing
  Activations activations_ckpt;  // recomputing blocks (when the model has blocks)
  double runtime_bytes = 0;      // resident before the model exists (LibTorch and the runtime)
  std::string runtime_how;
};

struct Estimate {
  Settings settings;
  Target target;
  Measured measured;
  std::vector<Row> rows;  // the table: every strategy (and fsdp mode) as the settings ask
  std::vector<Row> alternatives;  // + checkpointing / offload variants, for advice and auto
  std::optional<size_t> recommended;  // index into rows, or nullopt: nothing fits as set
  std::string why;
};

// Bytes for one candidate. Pure.
Row estimate_row(const Candidate& c, const Settings& s, const Measured& m, const Target& t);
// The table (every strategy under the job's own checkpointing and offload), the variants, and the
// recommendation: the fastest row that fits (Row::speed_cost), with the reason in one sentence.
Estimate estimate(const Settings& s, const Measured& m, const Target& t);

// The row for the job's own strategy (Settings::strategy and fsdp_sharding, its checkpointing
// and offload); nullopt for auto.
std::optional<Row> current_row(const Estimate& e);
// The fastest candidates that fit, cheapest first, excluding `current` (for the refusal).
std::vector<Row> cheapest_fixes(const Estimate& e, const Row& current, size_t n = 2);
// The paragraph that refuses a launch: needs per rank, what there is, the two cheapest changes.
std::string refusal_paragraph(const Estimate& e, const Row& current);
// auto: the chosen row and one line saying which and why; throws mtrain::Error (exit 2) when
// nothing fits, naming what would.
std::pair<Row, std::string> choose_auto(const Estimate& e);

// "80GiB", "80 GB", "24g", "1.5TiB", "81920MiB", plain bytes. nullopt when not a size.
std::optional<double> parse_bytes(const std::string& text);

std::string render_text(const Estimate& e);
nlohmann::json to_json(const Estimate& e);

}  // namespace mtrain::estimate
