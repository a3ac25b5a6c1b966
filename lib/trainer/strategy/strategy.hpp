#pragma once
// The interface every training strategy implements: ddp (ddp.cpp; in bf16/fp16 the sharded
// engine with one shard per rank), zero1/2/3 (zero.cpp) and fsdp (fsdp.cpp), the last two over
// the engine in sharded_engine.* .
//
// Life of a step, as the loop drives it:
//   for each micro-batch:  forward_backward(loss_fn, sync = last micro-batch, scale = 1/accum)
//   step(lr)                — gradients are reduced by now; clip, update, zero gradients
//                             (fp16: a step whose gradients overflowed on any rank is skipped
//                             on every rank and the loss scale lowered)
// Checkpoints see a strategy as a list of tensor pieces: every logical tensor (a parameter,
// an optimiser state of a parameter) has a global name, shape and dtype, and each rank holds
// [offset, offset+numel) of it in flattened order. The manifest records those global offsets,
// so a checkpoint written by one strategy/world size can be read by another (resharding).
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include "lib/config/names.hpp"
#include "lib/config/sharding_choices.hpp"
#include "lib/config/train_choices.hpp"
#include "lib/trainer/optim/loss_scale.hpp"
#include "lib/trainer/optim/optimizer.hpp"

namespace mtrain::trainer {

class Communicator;

// Model-state bytes resident on this rank between steps (docs/architecture.md §5/6), and the
// high-water marks of what the strategy held transiently during steps so far.
struct MemoryLedger {
  int64_t params = 0;
  int64_t grads = 0;
  int64_t optimizer = 0;  // optimiser state, and the fp32 master shard in bf16/fp16
  int64_t gathered = 0;   // largest parameter unit gathered transiently (ZeRO-3/FSDP), not resident
  // Peaks since setup (0 for strategies that hold nothing transiently): gathered parameter units;
  // unsharded gradients awaiting reduction (sharded-gradient modes: autograd's gradients and the
  // flat reduction buffers); and the two together at the same moment.
  int64_t gathered_peak = 0;
  int64_t unsharded_grads_peak = 0;
  int64_t transient_peak = 0;
};

struct StepResult {
  double grad_norm = -1;  // global norm before clipping when clipping is on, else negative
  bool skipped = false;   // fp16 overflow: no update this step
  double loss_scale = 1;  // the scale the step's backward used (1 unless fp16)
};

// One piece of a logical tensor held by this rank.
struct TensorPiece {
  std::string name;                   // "model/<param>", "optim/<state>/<param>", "optim/step"
  std::vector<int64_t> global_shape;  // of the whole logical tensor
  at::ScalarType dtype = at::kFloat;
  int64_t offset = 0;                 // first element, in the flattened logical tensor
  at::Tensor data;                    // flat, this rank's elements (CPU or device)
};

// Reads any element range of a logical tensor from a checkpoint, whoever wrote it.
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual bool has(const std::string& name) const = 0;
  virtual std::vector<int64_t> shape(const std::string& name) const = 0;
  // Flat fp32/int64 CPU tensor of `numel` elements starting at `offset`.
  virtual at::Tensor read(const std::string& name, int64_t offset, int64_t numel) const = 0;
};

// DeepSpeed zero_optimization (names and defaults as the settings registry's zero.*). The stage
// is the strategy's (zero1-3), not an option.
struct ZeroOptions {
  int64_t allgather_bucket_size = 500000000;
  int64_t reduce_bucket_size = 500000000;
  // Unset ('auto', the default): on for stage 3 only, as DeepSpeed decides when the key is absent.
  std::optional<bool> overlap_comm;
  bool contiguous_gradients = true;
  int64_t stage3_prefetch_bucket_size = 50000000;
  int64_t stage3_param_persistence_threshold = 100000;
  int64_t stage3_max_live_parameters = 1000000000;
  int64_t stage3_max_reuse_distance = 1000000000;
  config::OffloadDevice offload_optimizer_device = config::OffloadDevice::None;
  config::OffloadDevice offload_param_device = config::OffloadDevice::None;
  bool stage3_gather_16bit_weights_on_model_save = false;
};

// torch FSDP (the registry's fsdp.*).
struct FsdpOptions {
  config::ShardingStrategy sharding_strategy = config::ShardingStrategy::FullShard;
  config::WrapPolicy wrap_policy = config::WrapPolicy::Layer;
  int64_t min_num_params = 100000000;
  bool forward_prefetch = false;
  config::BackwardPrefetch backward_prefetch = config::BackwardPrefetch::BackwardPre;
  bool limit_all_gathers = true;
  bool cpu_offload = false;
};

struct StrategyOptions {
  double bucket_cap_mb = 25;
  double first_bucket_mb = 1;
  bool find_unused_parameters = false;
  double grad_clip = 0;  // global-norm clipping; 0 = off
  OptimOptions optim;
  ZeroOptions zero;
  FsdpOptions fsdp;
  config::Precision precision = config::Precision::Fp32;  // train.precision
  LossScaleOptions loss_scale;     // fp16 only
  // HYBRID_SHARD: ranks per node (the shard group size); 0 = the whole world. The worker sets
  // it from LOCAL_WORLD_SIZE; strategies read only this.
  int local_world_size = 0;
};

struct ParameterExport {
  std::string name;
  std::vector<int64_t> shape;
  at::ScalarType dtype = at::kFloat;
  std::function<at::Tensor()> data;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;

  // Takes the model (already on its device, fp32): broadcasts or shards its parameters and
  // builds the optimiser state. Collective.
  virtual void setup(std::shared_ptr<torch::nn::Module> model) = 0;

  // One micro-batch: loss = loss_fn(); backward of loss·scale. With sync, gradients are reduced
  // across ranks (overlapping backward) and complete on return; without, they only accumulate
  // locally. Returns the unscaled loss, detached.
  virtual at::Tensor forward_backward(const std::function<at::Tensor()>& loss_fn, bool sync,
                                      double scale) = 0;

  // Clip (optim grad_clip), update at `lr`, zero the gradients.
  virtual StepResult step(double lr) = 0;

  virtual int64_t optimizer_steps() const = 0;
  virtual MemoryLedger memory() const = 0;
  virtual int64_t num_parameters() const = 0;  // Ψ, unique trainable elements

  // Checkpoint state: the pieces this rank saves, and loading them back from any layout.
  virtual std::vector<TensorPiece> state_pieces() = 0;
  virtual void load_state(const TensorSource& src) = 0;
  // Pretrained weights (model.init): each parameter whose "model/<name>" tensor `src` has is
  // set from it (the fp32 master copy too in bf16/fp16); parameters it lacks keep their values,
  // optimiser state is untouched. Each rank reads only the elements it holds (its shard, or the
  // whole tensor where parameters are replicated), so no rank holds the model twice. Not
  // collective; every rank must see the same source.
  virtual void load_parameters(const TensorSource& src) = 0;

  // Full parameters in named_parameters() order, as fp32 CPU tensors; collective (sharded
  // strategies gather), the result is valid on rank 0.
  virtual std::vector<std::pair<std::string, at::Tensor>> consolidated_parameters() = 0;

  // The same weights as lazily produced entries, so that writing model.pt never needs the whole
  // model on any rank. Protocol: every rank calls data() of every entry, in order, exactly once
  // (producers are collective — a sharded strategy gathers a unit when the first of its
  // parameters is asked for and drops it when the next unit is); the tensors are valid on rank 0.
  // A tensor may be a view of the live parameters (a resident unit is read in place): it is
  // written before training goes on, never kept across a step. The default wraps
  // consolidated_parameters().
  virtual std::vector<ParameterExport> export_parameters();
};

std::unique_ptr<Strategy> make_strategy(config::StrategyName name, const StrategyOptions& o,
                                        Communicator& comm);
// The same for a spelled name (tests, benches); an unknown name throws mtrain::Error.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& o,
                                        Communicator& comm);
std::unique_ptr<Strategy> make_ddp(const StrategyOptions& o, Communicator& comm);
// stage 1-3 (zero.cpp).
std::unique_ptr<Strategy> make_zero(int stage, const StrategyOptions& o, Communicator& comm);
// fsdp.cpp.
std::unique_ptr<Strategy> make_fsdp(const StrategyOptions& o, Communicator& comm);

// Splits n elements over `world` ranks as evenly as possible: [begin, end) of rank r.
std::pair<int64_t, int64_t> even_split(int64_t n, int world, int rank);

}  // namespace mtrain::trainer
