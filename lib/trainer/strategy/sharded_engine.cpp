// The sharded engine: setup, forward/backward with gather-on-use, and the update. Protocol in
// sharded_engine.hpp; gradient reduction in sharded_reduce.cpp; checkpoint state and the ledger
// in sharded_state.cpp.
#include "lib/trainer/strategy/sharded_engine.hpp"

#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "lib/core/error.hpp"
#include "lib/trainer/optim/clip.hpp"
#include "lib/trainer/strategy/parameter_use.hpp"

namespace mtrain::trainer {
namespace detail {

namespace {

// Storage → (engine, unit) for every non-resident unit of every live engine. The op-input
// callback is one plain function for the process (ranks in tests are threads), so it looks the
// owner up here; the lock is never held while an engine gathers.
std::mutex g_mu;
std::unordered_map<const void*, std::pair<ShardedEngine*, size_t>> g_storages;

void* dispatch(const void* const* storages, size_t n) {
  // The units one operator reads, per engine (ranks in tests are threads: one engine each).
  ShardedEngine* engine = nullptr;
  std::vector<size_t> units;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (size_t i = 0; i < n; ++i) {
      auto it = g_storages.find(storages[i]);
      if (it == g_storages.end()) continue;
      if (engine != nullptr && it->second.first != engine) continue;  // one operator, one engine
      engine = it->second.first;
      if (std::find(units.begin(), units.end(), it->second.second) == units.end()) units.push_back(it->second.second);
    }
  }
  return engine != nullptr && engine->on_op(units) ? engine : nullptr;
}

void dispatch_end(void* engine) { static_cast<ShardedEngine*>(engine)->end_op(); }

int64_t round_up(int64_t n, int64_t m) { return std::max<int64_t>(m, (n + m - 1) / m * m); }

}  // namespace

ShardedEngine::ShardedEngine(ShardedConfig c, const StrategyOptions& o, Communicator& comm)
    : c_(std::move(c)), o_(o), comm_(comm), prec_(precision_policy(o.precision)) {
  scaler_ = LossScaler(o.loss_scale, prec_.loss_scaling);
}

ShardedEngine::~ShardedEngine() {
  watch_.reset();
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto it = g_storages.begin(); it != g_storages.end();) {
    it = it->second.first == this ? g_storages.erase(it) : std::next(it);
  }
}

void ShardedEngine::build_groups() {
  const int n = comm_.world(), r = comm_.rank();
  S_ = c_.shard_size <= 0 ? n : c_.shard_size;
  if (S_ > n || n % S_ != 0) {
    throw UsageError(fmt::format("{}: a shard group of {} ranks does not divide the world of {}", c_.name, S_, n),
                     "for HYBRID_SHARD the ranks per node (LOCAL_WORLD_SIZE) must divide WORLD_SIZE");
  }
  g_ = r % S_;
  rep_ = r / S_;
  if (S_ > 1 && S_ < n) {
    std::vector<int> members;
    for (int i = 0; i < S_; ++i) members.push_back(rep_ * S_ + i);
    shard_owned_ = comm_.subgroup(fmt::format("shard{}", rep_), members);
    shard_comm_ = shard_owned_.get();
  } else if (S_ == n && n > 1) {
    shard_comm_ = &comm_;
  }
  if (n / S_ > 1) {
    if (S_ == 1) {
      replica_comm_ = &comm_;
    } else {
      std::vector<int> members;
      for (int i = 0; i < n / S_; ++i) members.push_back(i * S_ + g_);
      replica_owned_ = comm_.subgroup(fmt::format("replica{}", g_), members);
      replica_comm_ = replica_owned_.get();
    }
  }
}

void ShardedEngine::setup(std::shared_ptr<torch::nn::Module> model) {
  model_ = std::move(model);
  owner_ = std::this_thread::get_id();
  std::unordered_map<const void*, int> index;
  for (const auto& item : model_->named_parameters(/*recurse=*/true)) {
    const auto& p = item.value();
    all_names_.push_back(item.key());
    all_params_.push_back(p);
    const void* key = p.unsafeGetTensorImpl();
    if (!p.requires_grad()) {
      all_index_.push_back(-1);
      continue;
    }
    auto it = index.find(key);
    if (it != index.end()) {
      all_index_.push_back(it->second);
      continue;
    }
    if (p.scalar_type() != at::kFloat) {
      throw UsageError(fmt::format("{} takes an fp32 model; parameter '{}' is {}", c_.name, item.key(),
                                   c10::toString(p.scalar_type())),
                       "the strategy casts to train.precision itself");
    }
    index[key] = static_cast<int>(params_.size());
    all_index_.push_back(static_cast<int>(params_.size()));
    names_.push_back(item.key());
    params_.push_back(p);
    num_params_ += p.numel();
  }
  if (params_.empty()) throw UsageError("the model has no trainable parameters");
  device_ = params_.front().device();
  optim_device_ = c_.offload_optimizer ? at::Device(at::kCPU) : device_;
  param_home_ = c_.offload_params ? at::Device(at::kCPU) : device_;
  build_groups();

  ParamList pl;
  pl.names = names_;
  for (const auto& p : params_) pl.numels.push_back(p.numel());
  const auto plans = c_.plan(pl, *model_);
  unit_of_param_.assign(params_.size(), SIZE_MAX);
  for (size_t u = 0; u < plans.size(); ++u) {
    for (size_t i : plans[u].params) {
      if (i >= params_.size() || unit_of_param_[i] != SIZE_MAX) {
        throw RuntimeFailure(fmt::format("{}: the unit plan places parameter #{} twice or out of range", c_.name, i));
      }
      unit_of_param_[i] = u;
    }
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    if (unit_of_param_[i] == SIZE_MAX) {
      throw RuntimeFailure(fmt::format("{}: the unit plan leaves parameter '{}' out", c_.name, names_[i]));
    }
  }
  slot_of_param_.assign(params_.size(), 0);
  units_.reserve(plans.size());
  for (const auto& plan : plans) build_unit(plan);
  if (c_.grads_sharded) {
    int64_t largest = 0;
    for (const auto& u : units_) largest = std::max(largest, u.padded);
    grad_limit_ = 2 * largest * static_cast<int64_t>(c10::elementSize(prec_.reduce));
  }

  // Buffers (BatchNorm statistics) are replicated: rank 0's everywhere.
  for (auto& b : model_->buffers(/*recurse=*/true)) {
    if (b.is_contiguous() && b.numel() > 0) comm_.broadcast(b, 0).wait();
  }
  got_grad_.assign(params_.size(), 0);
  in_flat_.assign(params_.size(), 0);
  for (size_t i = 0; i < params_.size(); ++i) {
    hooks_.push_back(compat::after_grad_accumulated(params_[i], [this, i] { on_grad(i); }));
  }
  bool any_released = false;
  for (const auto& u : units_) any_released = any_released || !u.resident;
  if (any_released) watch_ = compat::watch_op_inputs(&dispatch, &dispatch_end);
}

void ShardedEngine::build_unit(const UnitPlan& plan) {
  at::NoGradGuard no_grad;
  Unit u;
  u.label = plan.label;
  for (size_t i : plan.params) {
    slot_of_param_[i] = u.slots.size();
    u.slots.push_back({i, u.numel, params_[i].numel()});
    u.numel += params_[i].numel();
  }
  u.padded = round_up(u.numel, S_);
  u.shard = u.padded / S_;
  u.resident = c_.params_resident || plan.persistent;
  u.pinned = plan.pinned;
  const at::ScalarType cd = prec_.param;
  const auto fp32 = at::TensorOptions().dtype(at::kFloat).device(device_);

  // Rank 0's initial values everywhere.
  at::Tensor init = at::zeros({u.padded}, fp32);
  for (const auto& s : u.slots) init.narrow(0, s.offset, s.numel).copy_(params_[s.param].reshape({-1}));
  comm_.broadcast(init, 0).wait();

  u.full = u.resident && cd == at::kFloat ? init : init.to(cd);
  for (const auto& s : u.slots) {
    auto& p = params_[s.param];
    p.set_data(u.full.narrow(0, s.offset, s.numel).view(p.sizes()));
  }
  const at::Tensor own = init.narrow(0, g_ * u.shard, u.shard);
  u.master_is_view = u.resident && cd == at::kFloat && optim_device_ == device_;
  u.master = u.master_is_view ? u.full.narrow(0, g_ * u.shard, u.shard) : own.to(optim_device_).clone();
  if (u.resident) {
    u.pshard = u.full.narrow(0, g_ * u.shard, u.shard);
  } else if (cd == at::kFloat && param_home_ == optim_device_) {
    u.pshard = u.master;
  } else {
    u.pshard = own.to(param_home_, cd).clone();
  }
  if (c_.grads_sharded) {
    u.gacc = at::zeros({u.shard}, at::TensorOptions().dtype(prec_.reduce).device(device_));
    for (const auto& s : u.slots) params_[s.param].mutable_grad() = at::Tensor();
  } else {
    u.gfull = at::zeros({u.padded}, at::TensorOptions().dtype(cd).device(device_));
    for (const auto& s : u.slots) {
      auto& p = params_[s.param];
      p.mutable_grad() = u.gfull.narrow(0, s.offset, s.numel).view(p.sizes());
    }
  }
  u.optim = make_optimizer(o_.optim, u.shard, at::TensorOptions().dtype(at::kFloat).device(optim_device_));
  const size_t index = units_.size();
  if (!u.resident) {
    {
      std::lock_guard<std::mutex> lock(g_mu);
      g_storages[u.full.storage().unsafeGetStorageImpl()] = {this, index};
    }
    compat::release_storage(u.full);
    u.gathered = false;
  }
  units_.push_back(std::move(u));
}

// ---- gather / release ---------------------------------------------------------------------

void ShardedEngine::gather_async(size_t ui) {
  Unit& u = units_[ui];
  if (u.resident || u.gathered) return;
  BusyGuard busy(busy_);
  compat::reallocate_storage(u.full, static_cast<size_t>(u.padded * u.full.element_size()));
  at::Tensor src = u.pshard.device() == device_ ? u.pshard : u.pshard.to(device_);
  if (shard_comm_ != nullptr) {
    u.gather = shard_comm_->all_gather(src, u.full);
  } else {
    u.full.copy_(src);
  }
  u.gathered = true;
  count_gathered(u.padded * u.full.element_size());
}

void ShardedEngine::ensure(size_t ui) {
  gather_async(ui);
  BusyGuard busy(busy_);
  units_[ui].gather.wait();
}

void ShardedEngine::release(size_t ui) {
  Unit& u = units_[ui];
  if (u.resident || !u.gathered) return;
  BusyGuard busy(busy_);
  u.gather.wait();
  compat::release_storage(u.full);
  u.gathered = false;
  count_gathered(-u.padded * u.full.element_size());
}

void ShardedEngine::release_all() {
  for (size_t u = 0; u < units_.size(); ++u) release(u);
}

void ShardedEngine::count_gathered(int64_t delta) {
  gathered_bytes_ += delta;
  gathered_peak_ = std::max(gathered_peak_, gathered_bytes_);
  transient_peak_ = std::max(transient_peak_, gathered_bytes_ + grad_bytes_);
}

void ShardedEngine::count_grads(int64_t delta) {
  grad_bytes_ += delta;
  grad_peak_ = std::max(grad_peak_, grad_bytes_);
  transient_peak_ = std::max(transient_peak_, gathered_bytes_ + grad_bytes_);
}

bool ShardedEngine::on_op(const std::vector<size_t>& units) {
  // Every unit an operator reads must stay complete until it returns: not released by another
  // unit's arrival (reshard after forward, the live limit) — neither among its own inputs (a
  // tied bias beside another unit's weight) nor by the operators it runs inside (aten::linear's
  // aten::t of one unit, then aten::addmm with the other's bias). The units of every operator
  // still running on the owner thread are held in open_ops_, popped by end_op.
  const bool owner = std::this_thread::get_id() == owner_;
  if (owner) open_ops_.push_back(units);
  for (size_t ui : units) on_use(ui);
  return owner;
}

void ShardedEngine::end_op() {
  if (!open_ops_.empty()) open_ops_.pop_back();
}

bool ShardedEngine::in_current_op(size_t ui) const {
  for (const auto& op : open_ops_)
    if (std::find(op.begin(), op.end(), ui) != op.end()) return true;
  return false;
}

void ShardedEngine::on_use(size_t ui) {
  if (busy_) return;
  // The thread that set up drives everything; CUDA backward runs on autograd's device threads
  // while that thread waits inside backward().
  if (std::this_thread::get_id() != owner_ && !(phase_ == Phase::Backward && device_.is_cuda())) return;
  Unit& u = units_[ui];
  u.last_use = ++clock_;
  if (phase_ == Phase::Backward) {
    ensure(ui);
    // BACKWARD_PRE: the next unit's gather is issued when this unit's backward begins, whether
    // this unit was gathered just now or by an earlier prefetch.
    const bool first = !u.bwd_started;
    u.bwd_started = true;
    if (first && c_.backward_prefetch > 0 && !c_.backward_prefetch_post) prefetch_backward(ui);
    return;
  }
  if (current_ != static_cast<int>(ui)) {
    const int prev = current_;
    current_ = static_cast<int>(ui);
    if (phase_ == Phase::Forward) cur_trace_.push_back(ui);
    if (prev >= 0 && c_.reshard_after_forward) after_forward_use(static_cast<size_t>(prev));
  }
  ensure(ui);
  if (phase_ == Phase::Forward) prefetch_forward();
  enforce_live_limit(ui);
}

void ShardedEngine::after_forward_use(size_t prev) {
  if (units_[prev].pinned || in_current_op(prev)) return;
  if (c_.max_reuse_distance > 0 && trace_.size() >= cur_trace_.size()) {
    int64_t dist = 0;
    for (size_t i = cur_trace_.size(); i < trace_.size(); ++i) {
      if (trace_[i] == prev) {
        if (dist <= c_.max_reuse_distance) return;  // used again soon: keep it gathered
        break;
      }
      dist += units_[trace_[i]].numel;
    }
  }
  release(prev);
}

void ShardedEngine::prefetch_forward() {
  if (c_.forward_prefetch <= 0 || trace_.size() < cur_trace_.size()) return;
  int64_t elems = 0;
  int n = 0;
  for (size_t i = cur_trace_.size(); i < trace_.size(); ++i) {
    if (elems >= c_.forward_prefetch || n >= c_.max_prefetch_units) break;
    const size_t v = trace_[i];
    if (static_cast<int>(v) == current_) continue;
    gather_async(v);
    elems += units_[v].numel;
    ++n;
  }
}

void ShardedEngine::prefetch_backward(size_t ui) {
  auto it = std::find(bwd_order_.begin(), bwd_order_.end(), ui);
  if (it == bwd_order_.end()) return;
  int64_t elems = 0;
  int n = 0;
  for (++it; it != bwd_order_.end(); ++it) {
    if (elems >= c_.backward_prefetch || n >= c_.max_prefetch_units) break;
    if (units_[*it].reduced) continue;
    gather_async(*it);
    elems += units_[*it].numel;
    ++n;
  }
}

void ShardedEngine::enforce_live_limit(size_t current) {
  if (c_.max_live == std::numeric_limits<int64_t>::max()) return;
  for (;;) {
    int64_t live = 0;
    int victim = -1;
    for (size_t v = 0; v < units_.size(); ++v) {
      const Unit& u = units_[v];
      if (u.resident || !u.gathered) continue;
      live += u.numel;
      if (v != current && !u.pinned && !in_current_op(v) && (victim < 0 || u.last_use < units_[victim].last_use))
        victim = static_cast<int>(v);
    }
    if (live <= c_.max_live || victim < 0) return;
    release(static_cast<size_t>(victim));
  }
}

// ---- forward / backward -------------------------------------------------------------------

at::Tensor ShardedEngine::forward_backward(const std::function<at::Tensor()>& loss_fn, bool sync,
                                           double scale) {
  if (std::this_thread::get_id() != owner_) {
    throw RuntimeFailure(c_.name + ": forward_backward must run on the thread that called setup()");
  }
  release_all();  // anything an evaluation left gathered
  sync_ = sync;
  phase_ = Phase::Forward;
  current_ = -1;
  cur_trace_.clear();
  at::Tensor loss;
  try {
    std::shared_ptr<void> autocast;
    if (prec_.param != at::kFloat) autocast = compat::autocast_scope(device_, prec_.param);
    loss = loss_fn();
  } catch (const c10::Error& e) {
    phase_ = Phase::Idle;
    if (prec_.param == at::kHalf && device_.is_cpu()) {
      throw UsageError(fmt::format("train.precision fp16: an operator of the model has no fp16 kernel on "
                                   "the CPU ({})",
                                   e.what_without_backtrace()),
                       "use train.precision=bf16 on the CPU (fp16 needs a GPU with LibTorch 1.13)");
    }
    throw;
  } catch (...) {
    phase_ = Phase::Idle;
    throw;
  }
  if (c_.reshard_after_forward) release_all();
  if (!cur_trace_.empty()) {
    trace_ = cur_trace_;
    bwd_order_.clear();
    for (auto it = trace_.rbegin(); it != trace_.rend(); ++it)
      if (std::find(bwd_order_.begin(), bwd_order_.end(), *it) == bwd_order_.end()) bwd_order_.push_back(*it);
  }
  phase_ = Phase::Backward;
  current_ = -1;
  std::fill(got_grad_.begin(), got_grad_.end(), 0);
  std::fill(in_flat_.begin(), in_flat_.end(), 0);
  for (auto& u : units_) {
    u.waiting = u.slots.size();
    u.reduced = false;
    u.bwd_started = false;
    if (u.gflat.defined()) {  // left by a backward that threw
      count_grads(-u.gflat.numel() * u.gflat.element_size());
      u.gflat = at::Tensor();
    }
  }
  const double factor = scale * scaler_.scale();
  try {
    if (factor != 1.0) {
      (loss * factor).backward();
    } else {
      loss.backward();
    }
    finish_backward();
  } catch (...) {
    phase_ = Phase::Idle;
    throw;
  }
  phase_ = Phase::Idle;
  return loss.detach().to(at::kFloat);
}

// ---- update -------------------------------------------------------------------------------

at::Tensor ShardedEngine::grad_shard(Unit& u) {
  return c_.grads_sharded ? u.gacc : u.gfull.narrow(0, g_ * u.shard, u.shard);
}

StepResult ShardedEngine::step(double lr) {
  at::NoGradGuard no_grad;
  release_all();
  StepResult r;
  r.loss_scale = scaler_.scale();
  auto zero_grads = [&] {
    for (auto& u : units_) (c_.grads_sharded ? u.gacc : u.gfull).zero_();
  };
  if (scaler_.enabled()) {
    double bad = 0;
    for (auto& u : units_) {
      if (!at::isfinite(grad_shard(u)).all().item<bool>()) bad = 1;
    }
    at::Tensor flag = at::full({1}, bad, at::kDouble);
    comm_.all_reduce(flag, "all_reduce(overflow)").wait();
    if (flag.item<double>() > 0) {
      zero_grads();
      scaler_.update(true);
      r.skipped = true;
      return r;
    }
  }
  const double inv = 1.0 / scaler_.scale();
  std::vector<at::Tensor> g32;
  for (auto& u : units_) {
    at::Tensor g = grad_shard(u);
    if (g.scalar_type() != at::kFloat || g.device() != optim_device_) g = g.to(optim_device_, at::kFloat);
    if (inv != 1.0) g.mul_(inv);
    g32.push_back(g);
  }
  if (o_.grad_clip > 0) r.grad_norm = clip_grad_norm(g32, o_.grad_clip, shard_comm_);
  for (size_t i = 0; i < units_.size(); ++i) {
    units_[i].optim->step(units_[i].master, g32[i], lr, /*zero_grad=*/false);
  }
  zero_grads();
  std::vector<CommHandle> hs;
  for (auto& u : units_) {
    if (u.resident) {
      at::Tensor own = u.full.narrow(0, g_ * u.shard, u.shard);
      if (!u.master_is_view) own.copy_(u.master);
      // In place: the input is this rank's own slice of the output (Communicator::all_gather).
      if (shard_comm_ != nullptr) hs.push_back(shard_comm_->all_gather(own, u.full));
    } else if (!u.pshard.is_same(u.master)) {
      u.pshard.copy_(u.master);
    }
  }
  for (auto& h : hs) h.wait();
  scaler_.update(false);
  return r;
}

int64_t ShardedEngine::optimizer_steps() const {
  return units_.empty() ? 0 : units_.front().optim->steps();
}

}  // namespace detail

// The same path as an operator's inputs (dispatch / dispatch_end), called by hand.
std::shared_ptr<void> use_parameters(const std::vector<at::Tensor>& tensors) {
  std::vector<const void*> storages;
  storages.reserve(tensors.size());
  for (const at::Tensor& t : tensors)
    if (t.defined() && t.has_storage()) storages.push_back(t.storage().unsafeGetStorageImpl());
  void* engine = detail::dispatch(storages.data(), storages.size());
  if (engine == nullptr) return nullptr;
  return std::shared_ptr<void>(engine, [](void* e) { detail::dispatch_end(e); });
}

std::unique_ptr<Strategy> make_sharded(ShardedConfig c, const StrategyOptions& o, Communicator& comm) {
  return std::make_unique<detail::ShardedEngine>(std::move(c), o, comm);
}

}  // namespace mtrain::trainer
