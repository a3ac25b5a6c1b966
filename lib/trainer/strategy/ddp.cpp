// DDP: replicated parameters, gradients all-reduced in buckets while backward runs.
//
// Protocol (the same on every rank, which is what keeps Gloo's collectives matched):
//  * setup: parameters broadcast from rank 0, bucket by bucket.
//  * backward with sync: a post hook on each parameter's AccumulateGrad node counts the
//    bucket down; a bucket whose gradients are all accumulated is marked ready, and buckets are
//    launched strictly in bucket order (bucket k+1 waits for k), each as one async all-reduce
//    of its flat gradient buffer pre-divided by N. After backward the loop waits for all.
//  * find_unused_parameters: buckets still incomplete after backward (parameters the step did
//    not use) are launched then, with those gradients as they stand (zero or accumulated).
//    Without it an incomplete bucket is an error naming the parameter.
//  * micro-steps without sync accumulate into the same buffers and communicate nothing.
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <unordered_set>

#include "lib/core/error.hpp"
#include "lib/trainer/comm/communicator.hpp"
#include "lib/trainer/optim/clip.hpp"
#include "lib/trainer/strategy/bucket.hpp"
#include "lib/trainer/strategy/source_check.hpp"
#include "lib/trainer/strategy/sharded_engine.hpp"
#include "lib/trainer/strategy/strategy.hpp"

namespace mtrain::trainer {

namespace {

class Ddp final : public Strategy {
 public:
  Ddp(const StrategyOptions& o, Communicator& comm) : o_(o), comm_(comm) {}

  std::string name() const override { return config::to_string(config::StrategyName::Ddp); }

  void setup(std::shared_ptr<torch::nn::Module> model) override {
    model_ = std::move(model);
    std::unordered_set<const void*> seen;
    for (const auto& item : model_->named_parameters(/*recurse=*/true)) {
      const auto& p = item.value();
      all_names_.push_back(item.key());
      all_params_.push_back(p);
      if (!p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) continue;
      names_.push_back(item.key());
      params_.push_back(p);
    }
    if (params_.empty()) throw UsageError("the model has no trainable parameters");
    std::vector<int64_t> numels;
    for (const auto& p : params_) {
      if (p.scalar_type() != at::kFloat) {
        throw UsageError("DDP trains fp32 parameters; parameter '" + names_[numels.size()] + "' is " +
                         std::string(c10::toString(p.scalar_type())));
      }
      numels.push_back(p.numel());
      num_params_ += p.numel();
    }
    buckets_ = plan_buckets(numels, 4, o_.first_bucket_mb, o_.bucket_cap_mb);
    bind_buckets(buckets_, params_);
    bucket_of_.assign(params_.size(), 0);
    for (size_t b = 0; b < buckets_.size(); ++b)
      for (const auto& e : buckets_[b].entries) bucket_of_[e.param] = b;

    // Same initial weights everywhere.
    std::vector<CommHandle> hs;
    for (auto& b : buckets_) hs.push_back(comm_.broadcast(b.params, 0));
    for (auto& h : hs) h.wait();

    for (size_t b = 0; b < buckets_.size(); ++b) {
      optims_.push_back(make_optimizer(o_.optim, buckets_[b].numel, buckets_[b].params.options()));
    }
    ready_.assign(params_.size(), false);
    pending_.assign(buckets_.size(), 0);
    handles_.resize(buckets_.size());
    reset_pending();
    for (size_t i = 0; i < params_.size(); ++i) {
      hooks_.push_back(compat::after_grad_accumulated(params_[i], [this, i] { on_grad(i); }));
    }
  }

  at::Tensor forward_backward(const std::function<at::Tensor()>& loss_fn, bool sync,
                              double scale) override {
    sync_ = sync && comm_.world() > 1;
    reset_pending();
    at::Tensor loss = loss_fn();
    if (scale != 1.0) {
      (loss * scale).backward();
    } else {
      loss.backward();
    }
    if (sync_) finish_reduction();
    sync_ = false;
    return loss.detach();
  }

  StepResult step(double lr) override {
    double norm = -1;
    if (o_.grad_clip > 0) {
      std::vector<at::Tensor> grads;
      for (auto& b : buckets_) grads.push_back(b.grads);
      norm = clip_grad_norm(grads, o_.grad_clip, nullptr);
    }
    at::NoGradGuard no_grad;
    for (size_t b = 0; b < buckets_.size(); ++b) {
      optims_[b]->step(buckets_[b].params, buckets_[b].grads, lr, /*zero_grad=*/true);
    }
    StepResult r;
    r.grad_norm = norm;
    return r;
  }

  int64_t optimizer_steps() const override { return optims_.empty() ? 0 : optims_[0]->steps(); }

  MemoryLedger memory() const override {
    MemoryLedger m;
    for (size_t b = 0; b < buckets_.size(); ++b) {
      const auto& bk = buckets_[b];
      m.params += bk.params.numel() * bk.params.element_size();
      m.grads += bk.grads.numel() * bk.grads.element_size();
      m.optimizer += bk.numel * optims_[b]->state_bytes_per_element();
    }
    return m;
  }

  int64_t num_parameters() const override { return num_params_; }

  // DDP state is replicated; rank r saves the r-th slice of every tensor so the write is
  // spread over ranks and the files have the layout a sharded strategy would read.
  std::vector<TensorPiece> state_pieces() override {
    std::vector<TensorPiece> out;
    const int r = comm_.rank(), n = comm_.world();
    auto add = [&](const std::string& name, const at::Tensor& full) {
      auto [b, e] = even_split(full.numel(), n, r);
      if (e <= b) return;
      TensorPiece p;
      p.name = name;
      p.global_shape = full.sizes().vec();
      p.dtype = full.scalar_type();
      p.offset = b;
      p.data = full.reshape({-1}).narrow(0, b, e - b);
      out.push_back(std::move(p));
    };
    for (size_t i = 0; i < params_.size(); ++i) add("model/" + names_[i], params_[i].detach());
    for (size_t bi = 0; bi < buckets_.size(); ++bi) {
      for (auto& [sname, st] : optims_[bi]->state()) {
        for (const auto& e : buckets_[bi].entries) {
          add("optim/" + sname + "/" + names_[e.param],
              st.narrow(0, e.offset, e.numel).view(params_[e.param].sizes()));
        }
      }
    }
    if (r == 0) {
      TensorPiece p;
      p.name = "optim/step";
      p.global_shape = {1};
      p.dtype = at::kLong;
      p.data = at::full({1}, optimizer_steps(), at::kLong);
      out.push_back(std::move(p));
    }
    return out;
  }

  void load_state(const TensorSource& src) override {
    at::NoGradGuard no_grad;
    auto load = [&](const std::string& name, at::Tensor dst) {
      require_source_tensor(src, name, dst.sizes());
      dst.copy_(src.read(name, 0, dst.numel()).view(dst.sizes()));
    };
    for (size_t i = 0; i < params_.size(); ++i) load("model/" + names_[i], params_[i]);
    for (size_t bi = 0; bi < buckets_.size(); ++bi) {
      for (auto& [sname, st] : optims_[bi]->state()) {
        for (const auto& e : buckets_[bi].entries) {
          load("optim/" + sname + "/" + names_[e.param],
               st.narrow(0, e.offset, e.numel).view(params_[e.param].sizes()));
        }
      }
    }
    const int64_t steps = src.has("optim/step") ? src.read("optim/step", 0, 1).item<int64_t>() : 0;
    for (auto& o : optims_) o->set_steps(steps);
    for (auto& b : buckets_) b.grads.zero_();
  }

  // Replicated: every rank reads each tensor whole into its parameter (frozen ones included).
  void load_parameters(const TensorSource& src) override {
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < all_params_.size(); ++i) {
      const std::string name = "model/" + all_names_[i];
      if (!src.has(name)) continue;
      require_source_tensor(src, name, all_params_[i].sizes());
      all_params_[i].copy_(src.read(name, 0, all_params_[i].numel()).view(all_params_[i].sizes()));
    }
  }

  std::vector<std::pair<std::string, at::Tensor>> consolidated_parameters() override {
    std::vector<std::pair<std::string, at::Tensor>> out;
    for (size_t i = 0; i < all_params_.size(); ++i) {
      out.emplace_back(all_names_[i], all_params_[i].detach().to(at::kCPU, at::kFloat).clone());
    }
    return out;
  }

  // Every rank holds the whole model: each parameter is read where it is (a copy only to bring it
  // to the CPU in fp32), one at a time — the snapshot above cloned all of them at once on every
  // rank at the end of the run (+4Ψ, issue 31).
  std::vector<ParameterExport> export_parameters() override {
    std::vector<ParameterExport> out;
    for (size_t i = 0; i < all_params_.size(); ++i) {
      const at::Tensor p = all_params_[i].detach();
      out.push_back({all_names_[i], p.sizes().vec(), at::kFloat, [p] { return p.to(at::kCPU, at::kFloat); }});
    }
    return out;
  }

 private:
  void reset_pending() {
    for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].entries.size();
    std::fill(ready_.begin(), ready_.end(), false);
    next_launch_ = 0;
  }

  void on_grad(size_t i) {
    if (!sync_ || ready_[i]) return;
    ready_[i] = true;
    if (--pending_[bucket_of_[i]] == 0) launch_ready();
  }

  void launch_ready() {
    while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0) {
      auto& g = buckets_[next_launch_].grads;
      g.div_(static_cast<double>(comm_.world()));
      handles_[next_launch_] = comm_.all_reduce(g);
      ++next_launch_;
    }
  }

  void finish_reduction() {
    if (next_launch_ < buckets_.size()) {
      if (!o_.find_unused_parameters) {
        for (size_t i = 0; i < params_.size(); ++i) {
          if (!ready_[i]) {
            // Drain what is in flight so the error is not masked by a hung collective.
            for (size_t b = 0; b < next_launch_; ++b) handles_[b].wait();
            throw RuntimeFailure(fmt::format("parameter '{}' received no gradient in this step", names_[i]),
                                 "set ddp.find_unused_parameters=true if the model skips parameters "
                                 "in some steps");
          }
        }
      }
      for (auto& p : pending_) p = 0;
      launch_ready();
    }
    for (auto& h : handles_) h.wait();
  }

  StrategyOptions o_;
  Communicator& comm_;
  std::shared_ptr<torch::nn::Module> model_;
  std::vector<std::string> names_, all_names_;
  std::vector<at::Tensor> params_, all_params_;
  int64_t num_params_ = 0;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;
  std::vector<std::unique_ptr<FlatOptimizer>> optims_;
  std::vector<std::shared_ptr<void>> hooks_;
  std::vector<bool> ready_;
  std::vector<size_t> pending_;
  std::vector<CommHandle> handles_;
  size_t next_launch_ = 0;
  bool sync_ = false;
};

}  // namespace

std::unique_ptr<Strategy> make_ddp(const StrategyOptions& o, Communicator& comm) {
  if (o.precision == config::Precision::Fp32) return std::make_unique<Ddp>(o, comm);
  // bf16/fp16: replicated compute-dtype parameters with an fp32 master copy — the sharded
  // engine with one shard per rank and DDP's buckets as units (gradients all-reduced).
  ShardedConfig c;
  c.name = config::to_string(config::StrategyName::Ddp);
  c.shard_size = 1;
  c.grads_sharded = false;
  c.params_resident = true;
  const int64_t cap = std::max<int64_t>(1, static_cast<int64_t>(o.bucket_cap_mb * 1024 * 1024 / 4));
  c.plan = [cap](const ParamList& p, torch::nn::Module&) { return bucket_units(p, cap); };
  return make_sharded(std::move(c), o, comm);
}

}  // namespace mtrain::trainer
