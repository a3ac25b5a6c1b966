#pragma once
// The engine behind zero1/2/3, fsdp (every sharding_strategy) and DDP in mixed precision.
//
// Units. The parameters are cut into units (wrap_policy.hpp). A unit's parameters are flattened
// into one buffer `full` (compute dtype) padded to a multiple of the shard group size S, and the
// parameters become views of it. Rank g of the shard group owns elements [g·k, (g+1)·k), k =
// padded/S: the fp32 master copy of them (`master`), their optimiser state and (sharded-gradient
// modes) their gradient accumulator. HYBRID_SHARD has S = ranks per node and replicates shards
// across nodes (a replica group per shard index); NO_SHARD and DDP have S = 1.
//
// Modes (ShardedConfig):
//   full gradients (ZeRO-1, NO_SHARD, DDP): a persistent padded gradient buffer the parameters'
//     .grad are views of; micro-steps without sync only accumulate (no communication); the sync
//     micro-step reduce-scatters each unit as soon as its last gradient is accumulated (S = 1:
//     all-reduce). Sent per step: reduce-scatter + all-gather = 2Ψ(N−1)/N elements.
//   sharded gradients (ZeRO-2/3, FSDP): autograd allocates .grad; each one is copied into the
//     unit's padded flat buffer as soon as it is final and the .grad is dropped (with
//     contiguous_gradients off: all of them when the unit's last gradient arrives); the flat
//     buffer is reduce-scattered once the unit is complete — EVERY micro-step, accumulating
//     into the shard accumulator, so no rank ever keeps full unsharded gradients across
//     micro-steps (the price: one reduce-scatter per micro-step under gradient accumulation).
//     Over shared memory in fp32 there is no flat buffer: the reduce-scatter reads the .grad
//     tensors where they are (zeros for the gaps) and they are dropped when it is done — the
//     unit's gradients still exist once, and one copy of the unit per step is saved.
//   resident parameters (ZeRO-1/2, NO_SHARD, persistent units): `full` lives for the whole run;
//     after the update each rank all-gathers the new values.
//   non-resident parameters (ZeRO-3, FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD): the memory behind
//     `full` is freed between uses (the storage object and the parameter views stay, see
//     compat::release_storage) and all-gathered from the shards on demand.
//
// Gather-on-use protocol (LibTorch C++ has no module forward hooks). While the engine exists, a
// RecordFunction start callback on the thread that ran setup() sees the input tensors of every
// ATen operator before its kernel runs; an input whose storage is a non-resident unit's `full`
// triggers a gather of that unit first (waiting for a prefetch already in flight). So the unit
// is complete exactly when the first operator touches any of its parameters — in forward, in
// evaluation, and in backward (autograd's saved tensors are views of the same storage; its
// backward operators pass through the same callback, on the autograd threads it spawns).
//   forward: the sequence of units touched is recorded (the trace; identical on every rank).
//     With reshard_after_forward a unit is released when the forward moves on to another unit,
//     unless it is pinned (FSDP root), or the trace of the previous step shows it used again
//     within max_reuse_distance elements; gathered units beyond max_live elements are released
//     least recently used first; everything left is released when the forward returns.
//     Prefetch: the next units of the previous trace, up to forward_prefetch elements.
//   backward: a unit is released as soon as all its gradients have arrived, before they are
//     reduced; prefetch walks the trace backwards (BACKWARD_PRE: when a unit's backward begins,
//     i.e. its first use in backward, BACKWARD_POST: when it has been reduced).
// Reductions (sharded gradients): the previous unit's reduction is completed when the next one
// is launched, so at most one unit's reduction is in flight (overlapping the next unit's
// backward) beside the unit being filled; overlap_comm off: none, each is waited for at launch.
// It is completed earlier if the unit being filled would otherwise take the unsharded gradients
// past two reduce buckets (twice the largest unit: ZeRO-1/2's units are its reduce buckets), so
// with contiguous_gradients they never exceed that: the bucket being reduced (with the shard it
// yields) and the bucket being filled, as DeepSpeed's double-buffered IPG bucket.
// On the CPU the flat buffers of reductions, the gathered units and the export's gathers all take
// their memory from one block pool (comm/block_pool.hpp), which keeps released memory for the
// next buffer of any size (split and merged as needed) but never holds more than the most memory
// in use at once, as far as wholly free segments can be given back.
// Memory accounting: the engine counts the bytes it holds transiently — gathered units, and
// unsharded gradients (autograd's .grad of sharded-gradient units until they are flattened,
// and the flat reduction buffers) — and their high-water marks (MemoryLedger::*_peak).
// Every collective is issued in an order fixed by the (deterministic) autograd schedule and the
// trace, the same on every rank, which is what keeps Gloo/NCCL matched. Per step ZeRO-3/FSDP
// full-shard sends all-gather (forward) + all-gather (backward) + reduce-scatter = 3Ψ(N−1)/N.
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "lib/trainer/comm/communicator.hpp"
#include "lib/trainer/optim/loss_scale.hpp"
#include "lib/trainer/strategy/precision.hpp"
#include "lib/trainer/strategy/strategy.hpp"
#include "lib/trainer/strategy/wrap_policy.hpp"

namespace mtrain::trainer {

struct ShardedConfig {
  std::string name;
  int shard_size = 0;  // S; 0 = the whole world
  bool grads_sharded = true;
  bool params_resident = true;
  bool reshard_after_forward = false;
  int64_t forward_prefetch = 0;   // elements of upcoming units gathered ahead (0 = none)
  int64_t backward_prefetch = 0;  // the same in backward
  bool backward_prefetch_post = false;
  int max_prefetch_units = std::numeric_limits<int>::max();  // fsdp.limit_all_gathers: 1
  int64_t max_live = std::numeric_limits<int64_t>::max();     // gathered elements (forward)
  int64_t max_reuse_distance = 0;
  bool overlap_comm = true;  // false: each reduction is waited for where it is launched
  // Sharded gradients: copy each gradient into its unit's flat buffer as it arrives (else when
  // the unit's last gradient arrives).
  bool contiguous_gradients = true;
  bool offload_optimizer = false;
  bool offload_params = false;
  bool gather_16bit_on_save = false;
  std::function<std::vector<UnitPlan>(const ParamList&, torch::nn::Module&)> plan;
};

std::unique_ptr<Strategy> make_sharded(ShardedConfig c, const StrategyOptions& o, Communicator& comm);

namespace detail {

struct Slot {
  size_t param = 0;
  int64_t offset = 0;  // in the unit's flat buffer
  int64_t numel = 0;
};

struct Unit {
  std::string label;
  std::vector<Slot> slots;
  int64_t numel = 0, padded = 0, shard = 0;
  bool resident = true;
  bool pinned = false;
  bool master_is_view = false;  // master aliases full (fp32, resident, not offloaded)
  at::Tensor full;    // [padded] compute dtype; the parameters are views of it
  at::Tensor master;  // [shard] fp32, on the optimiser device
  at::Tensor pshard;  // [shard] compute dtype: what is gathered (may be master itself)
  at::Tensor gfull;   // [padded] full-gradient mode
  at::Tensor gacc;    // [shard] sharded-gradient mode
  at::Tensor gflat;   // [padded] this backward's gradients, filled as they arrive (contiguous)
  std::unique_ptr<FlatOptimizer> optim;
  bool gathered = true;
  CommHandle gather;  // a gather in flight
  size_t waiting = 0;
  bool reduced = false;
  bool bwd_started = false;  // used in this backward already (BACKWARD_PRE prefetches once)
  int64_t last_use = 0;
};

// Sets a flag for its scope (the engine's own tensor operations must not re-enter on_use).
struct BusyGuard {
  explicit BusyGuard(bool& b) : b_(b), was_(b) { b_ = true; }
  ~BusyGuard() { b_ = was_; }
  bool& b_;
  bool was_;
};

struct Reduction {
  size_t unit = 0;
  CommHandle h;
  bool replica_pending = false;  // hybrid: all-reduce across replicas after the reduce-scatter
  at::Tensor in, out;
  int64_t bytes = 0;  // flat buffers this reduction allocated (0 when it reduces gfull in place)
  double out_scale = 1.0;  // applied to `out` as it is accumulated (the 1/N average in fp32)
};

class ShardedEngine final : public Strategy {
 public:
  ShardedEngine(ShardedConfig c, const StrategyOptions& o, Communicator& comm);
  ~ShardedEngine() override;

  std::string name() const override { return c_.name; }
  void setup(std::shared_ptr<torch::nn::Module> model) override;
  at::Tensor forward_backward(const std::function<at::Tensor()>& loss_fn, bool sync,
                              double scale) override;
  StepResult step(double lr) override;
  int64_t optimizer_steps() const override;
  MemoryLedger memory() const override;
  int64_t num_parameters() const override { return num_params_; }
  std::vector<TensorPiece> state_pieces() override;
  void load_state(const TensorSource& src) override;
  void load_parameters(const TensorSource& src) override;
  std::vector<std::pair<std::string, at::Tensor>> consolidated_parameters() override;
  std::vector<ParameterExport> export_parameters() override;

  // The op-input callback lands here with the units of this engine one operator reads.
  // True when end_op() is owed (the operator's units are held until it returns).
  bool on_op(const std::vector<size_t>& units);
  void end_op();
  void on_use(size_t unit);

 private:
  enum class Phase { Idle, Forward, Backward };
  at::Tensor gather_for_save(Unit& u, at::ScalarType dt);
  // load_state (everything, every tensor required) and load_parameters (model/ tensors the
  // source has) share this walk over the units.
  void load_tensors(const TensorSource& src, bool whole_state);
  void build_groups();
  void build_unit(const UnitPlan& plan);
  void gather_async(size_t u);
  void ensure(size_t u);
  void release(size_t u);
  void release_all();
  // Transient-byte accounting (see the header comment); `delta` may be negative.
  void count_gathered(int64_t delta);
  void count_grads(int64_t delta);
  void after_forward_use(size_t prev);
  void prefetch_forward();
  void prefetch_backward(size_t u);
  void enforce_live_limit(size_t current);
  void on_grad(size_t param);
  void copy_into_flat(size_t unit, size_t param);
  // Completes reductions in flight, oldest first, until `bytes` more unreduced gradient fit
  // under grad_limit_ (or none is left in flight).
  void make_room(int64_t bytes);
  // Whether unit u's gradients go to the reduce-scatter as they are (shared memory, fp32), with
  // no flat copy: Communicator::reduce_scatter_pieces.
  bool reduce_from_grads(const Unit& u) const;
  void unit_done(size_t u);
  void launch_reduce(size_t u);
  // A flat reduction buffer of `numel` elements (reduce dtype, engine device); on the CPU its
  // memory comes from the block pool and returns there when the tensor is dropped.
  at::Tensor take_buffer(int64_t numel);
  void finish_oldest();
  void finish_backward();
  at::Tensor grad_shard(Unit& u);
  // [begin, end) of this rank's part of slot s for saving (empty when another rank saves it).
  std::pair<int64_t, int64_t> save_range(const Unit& u, const Slot& s) const;
  std::pair<int64_t, int64_t> own_range(const Unit& u, const Slot& s) const;

  ShardedConfig c_;
  StrategyOptions o_;
  Communicator& comm_;
  PrecisionPolicy prec_;
  LossScaler scaler_;
  std::unique_ptr<Communicator> shard_owned_, replica_owned_;
  Communicator* shard_comm_ = nullptr;    // set when S > 1
  Communicator* replica_comm_ = nullptr;  // set when N/S > 1
  int S_ = 1, g_ = 0, rep_ = 0;
  at::Device device_{at::kCPU}, optim_device_{at::kCPU}, param_home_{at::kCPU};

  std::shared_ptr<torch::nn::Module> model_;
  std::vector<std::string> names_, all_names_;
  std::vector<at::Tensor> params_, all_params_;
  std::vector<int> all_index_;  // all_params_[i] → index in params_, or -1
  int64_t num_params_ = 0;
  std::vector<Unit> units_;
  std::vector<size_t> unit_of_param_, slot_of_param_;
  std::vector<char> got_grad_;
  std::vector<char> in_flat_;  // this backward's gradient of param i is already in its unit's gflat
  std::vector<std::shared_ptr<void>> hooks_;
  std::shared_ptr<void> watch_;
  std::thread::id owner_;

  Phase phase_ = Phase::Idle;
  bool busy_ = false;
  bool sync_ = false;
  std::deque<Reduction> inflight_;
  std::vector<size_t> trace_, cur_trace_, bwd_order_;
  int current_ = -1;
  int64_t clock_ = 0;
  std::vector<std::vector<size_t>> open_ops_;  // units of the operators running now (outermost first)
  bool in_current_op(size_t unit) const;
  int64_t gathered_bytes_ = 0, grad_bytes_ = 0;  // held now
  int64_t gathered_peak_ = 0, grad_peak_ = 0, transient_peak_ = 0;
  // Two reduce buckets (the largest unit, reduce dtype): the most unsharded gradient bytes held
  // while a reduction is in flight (sharded-gradient modes, contiguous_gradients).
  int64_t grad_limit_ = std::numeric_limits<int64_t>::max();
};

}  // namespace detail
}  // namespace mtrain::trainer
