#pragma once
// The typed view of a resolved job that the launcher (its checks before any rank starts, the
// model check, the fit check) and `mtrain estimate` read: the trainer's settings they need (the
// model's shape and files, precision and batch, the strategy with its sharding, offload and
// bucket settings, the work dir and resume), each parsed once, here, from the registry's checked
// value. launch.* settings reach the launcher as LaunchOptions through their own binding table
// (lib/launch/launch_settings.cpp); the trainer has its own view (TrainJob).
//
// Each field is bound to its registry key in ONE table (job_view.cpp, job_view_bindings); a unit
// test holds every bound key to the registry and the defaults of a default job to the registry's.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/config/names.hpp"
#include "lib/config/registry.hpp"
#include "lib/config/resume.hpp"
#include "lib/config/sharding_choices.hpp"
#include "lib/config/train_choices.hpp"

namespace mtrain::config {

// model.*: what the model is, where its files are, and the built-in models' shapes.
struct ModelView {
  ModelName name = ModelName::Gpt;
  std::string path, eval_path;  // torchscript/compiled: the model file; the eval model
  bool trust_code = false;  // torchscript: load code the trust check cannot vouch for
  std::string init;  // pretrained weights ("" = none)
  bool init_strict = true;
  int64_t n_layer = 4, n_head = 4, n_embd = 128, block_size = 64, vocab_size = 256;  // gpt
  int64_t hidden = 256, depth = 3, input_dim = 32, num_classes = 10;  // mlp
};

// strategy and what changes its memory: ddp.*, zero.*, fsdp.*.
struct StrategyView {
  std::optional<StrategyName> name = StrategyName::Ddp;  // nullopt: auto (the launcher picks)
  double ddp_bucket_cap_mb = 25;
  // zero.*: nullopt where the setting says 'auto' (the trainer's rule applies).
  std::optional<int64_t> zero_reduce_bucket_size = 500000000;
  std::optional<bool> zero_overlap_comm;  // default auto: on for stage 3 only
  std::optional<int64_t> zero_persistence_threshold = 100000;
  int64_t zero_max_live_parameters = 1000000000;
  OffloadDevice zero_offload_optimizer = OffloadDevice::None;
  OffloadDevice zero_offload_param = OffloadDevice::None;
  ShardingStrategy fsdp_sharding = ShardingStrategy::FullShard;
  bool fsdp_cpu_offload = false;
  bool fsdp_activation_checkpointing = false;
};

struct JobView {
  ModelView model;
  StrategyView strategy;
  Precision precision = Precision::Fp32;  // train.precision
  int64_t batch_size = 16;  // train.batch_size, per rank
  bool cpu_memory_pool = true;  // train.cpu_memory_pool
  std::string work_dir = "work_dirs/default";
  Resume resume;  // checkpoint.resume
  bool checkpoint_overwrite = false;  // checkpoint.overwrite
};

struct JobViewBinding {
  std::string key;  // a registry key
  std::function<void(JobView&, const json& value, const std::string& key)> set;
};

// One entry per field of JobView.
const std::vector<JobViewBinding>& job_view_bindings();

// The view of a resolved job (every bound key present: a resolved job or job_spec of one).
// Throws mtrain::Error naming the key for a value of the wrong type (a job that bypassed the
// registry).
JobView job_view(const json& job);

}  // namespace mtrain::config
