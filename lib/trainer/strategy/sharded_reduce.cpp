// The sharded engine's gradient path: gradients as autograd finishes them, copied into their
// unit's flat buffer (contiguous_gradients), each complete unit reduce-scattered (all-reduced
// across replicas for HYBRID_SHARD) into the shard accumulator, and the reuse of the flat
// buffers on the CPU. Protocol in sharded_engine.hpp.
#include <ATen/core/grad_mode.h>

#include <vector>

#include "lib/trainer/comm/pooled_cpu.hpp"
#include "lib/trainer/strategy/sharded_engine.hpp"

namespace mtrain::trainer::detail {

void ShardedEngine::on_grad(size_t i) {
  if (phase_ != Phase::Backward || got_grad_[i]) return;
  got_grad_[i] = 1;
  const size_t ui = unit_of_param_[i];
  if (c_.grads_sharded) {
    at::Tensor& g = params_[i].mutable_grad();
    if (g.defined()) {
      const Unit& u = units_[ui];
      const bool flat = c_.contiguous_gradients && !reduce_from_grads(u);
      // What taking this gradient in adds: itself and, for a unit's first one, its flat buffer.
      int64_t incoming = g.numel() * g.element_size();
      if (flat && !u.gflat.defined()) incoming += u.padded * c10::elementSize(prec_.reduce);
      make_room(incoming);
      count_grads(g.numel() * g.element_size());
      if (flat) copy_into_flat(ui, i);
    }
  }
  if (--units_[ui].waiting == 0) unit_done(ui);
}

void ShardedEngine::make_room(int64_t bytes) {
  // The reduction in flight is given its input and output back before the next bucket outgrows
  // the bound, so the bucket being filled and the one being reduced stay within two buckets —
  // DeepSpeed's double-buffered IPG bucket under overlap_comm. Waiting earlier than launch
  // changes no collective's order: every rank has issued the reduction it waits for.
  while (!inflight_.empty() && grad_bytes_ + bytes > grad_limit_) finish_oldest();
}

bool ShardedEngine::reduce_from_grads(const Unit& u) const {
  return c_.grads_sharded && c_.contiguous_gradients && shard_comm_ != nullptr &&
         shard_comm_->reduce_scatter_takes_pieces() && prec_.reduce == at::kFloat &&
         u.full.scalar_type() == at::kFloat && device_.is_cpu();
}

void ShardedEngine::copy_into_flat(size_t ui, size_t i) {
  BusyGuard busy(busy_);
  at::NoGradGuard no_grad;
  Unit& u = units_[ui];
  if (!u.gflat.defined()) {
    u.gflat = take_buffer(u.padded);
    count_grads(u.gflat.numel() * u.gflat.element_size());
  }
  at::Tensor& g = params_[i].mutable_grad();
  const Slot& s = u.slots[slot_of_param_[i]];
  u.gflat.narrow(0, s.offset, s.numel).copy_(g.reshape({-1}));
  count_grads(-g.numel() * g.element_size());
  g = at::Tensor();
  in_flat_[i] = 1;
}

void ShardedEngine::unit_done(size_t ui) {
  Unit& u = units_[ui];
  if (u.reduced) return;
  u.reduced = true;
  // The gathered values are not needed to reduce the gradients: they are freed first, so the
  // unit's flat gradient buffer is never allocated on top of them.
  if (!u.resident) release(ui);
  if (c_.grads_sharded || sync_) launch_reduce(ui);
  if (c_.backward_prefetch > 0 && c_.backward_prefetch_post) prefetch_backward(ui);
}

void ShardedEngine::launch_reduce(size_t ui) {
  BusyGuard busy(busy_);
  at::NoGradGuard no_grad;
  Unit& u = units_[ui];
  const double inv_world = 1.0 / static_cast<double>(comm_.world());
  Reduction red;
  red.unit = ui;
  const bool from_grads = reduce_from_grads(u);
  std::vector<at::Tensor> pieces;  // from_grads: the input, at `offsets`
  std::vector<int64_t> offsets;
  if (c_.grads_sharded) {
    // The previous unit's reduction has overlapped this unit's backward; it is completed (its
    // flat buffers given back) before this unit's reduction starts.
    while (!inflight_.empty()) finish_oldest();
    if (from_grads) {
      // The shared-memory reduce-scatter reads autograd's gradients where they are (zeros for
      // missing ones and the padding): no flat copy of the unit. They are held until it is done.
      // Slots are laid out in ascending offset order, as the pieces must be.
      for (const auto& s : u.slots) {
        auto& p = params_[s.param];
        const at::Tensor g = p.grad();
        if (g.defined()) {
          pieces.push_back(g.reshape({-1}).contiguous());
          offsets.push_back(s.offset);
          if (got_grad_[s.param]) red.bytes += g.numel() * g.element_size();
        }
        p.mutable_grad() = at::Tensor();
      }
    } else {
      if (u.gflat.defined()) {
        red.in = std::move(u.gflat);
        u.gflat = at::Tensor();
      } else {
        red.in = take_buffer(u.padded);
        count_grads(red.in.numel() * red.in.element_size());
      }
      red.bytes = red.in.numel() * red.in.element_size();
      // Every element is written (the buffer may be a reused one): the gradients not copied in on
      // arrival, zeros for missing gradients and the padding.
      for (const auto& s : u.slots) {
        auto& p = params_[s.param];
        if (in_flat_[s.param]) continue;
        const at::Tensor g = p.grad();
        at::Tensor dst = red.in.narrow(0, s.offset, s.numel);
        if (g.defined()) {
          dst.copy_(g.reshape({-1}));
          // Counted only if on_grad saw it (a gradient left from before this backward is not).
          if (got_grad_[s.param]) count_grads(-g.numel() * g.element_size());
        } else {
          dst.zero_();
        }
        p.mutable_grad() = at::Tensor();  // the full gradient is dropped right here
      }
      if (u.padded > u.numel) red.in.narrow(0, u.numel, u.padded - u.numel).zero_();
    }
    // The 1/N average: in fp32 it is applied to the reduced shard as it is accumulated (one
    // fused add over Ψ/N elements instead of a pass over the whole unit on every rank); a 16-bit
    // reduction divides first, like torch FSDP's pre-divide, so that the sum cannot overflow.
    if (prec_.reduce == at::kFloat) {  // always so when from_grads
      red.out_scale = inv_world;
    } else {
      red.in.mul_(inv_world);
    }
    if (shard_comm_ != nullptr) {
      red.out = take_buffer(u.shard);
      red.bytes += red.out.numel() * red.out.element_size();
      count_grads(red.out.numel() * red.out.element_size());
    } else {
      red.out = red.in;
    }
  } else {
    red.in = u.gfull;
    red.in.mul_(inv_world);
    red.out = u.gfull.narrow(0, g_ * u.shard, u.shard);
  }
  if (shard_comm_ != nullptr) {
    red.h = from_grads ? shard_comm_->reduce_scatter_pieces(std::move(pieces), offsets, red.out)
                       : shard_comm_->reduce_scatter(red.in, red.out);
    red.replica_pending = replica_comm_ != nullptr;
  } else if (replica_comm_ != nullptr) {
    red.h = replica_comm_->all_reduce(red.out);
  }
  inflight_.push_back(std::move(red));
  if (!c_.overlap_comm) finish_oldest();
}

void ShardedEngine::finish_oldest() {
  BusyGuard busy(busy_);
  Reduction red = std::move(inflight_.front());
  inflight_.pop_front();
  red.h.wait();
  if (red.replica_pending) replica_comm_->all_reduce(red.out).wait();
  if (c_.grads_sharded) {
    units_[red.unit].gacc.add_(red.out, red.out_scale);
    // The flat buffers go back to the block pool here, for the next unit's reduction or gather.
    red.out = at::Tensor();
    red.in = at::Tensor();
  }
  count_grads(-red.bytes);
}

at::Tensor ShardedEngine::take_buffer(int64_t numel) {
  return pooled_empty(numel, at::TensorOptions().dtype(prec_.reduce).device(device_));
}

void ShardedEngine::finish_backward() {
  // Units with parameters the step did not use: reduced now (missing gradients count as zero),
  // in unit order on every rank.
  for (size_t u = 0; u < units_.size(); ++u) unit_done(u);
  while (!inflight_.empty()) finish_oldest();
  release_all();
  // The pool keeps what this backward freed: the next backward reuses those pages (a trim here
  // gave them back, and every step faulted them in again: zero2's 871 MB bucket, 25% of its CPU
  // time in the kernel's page clearing). The pool's bound still caps what it holds.
}

}  // namespace mtrain::trainer::detail
