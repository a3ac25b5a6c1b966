#include "lib/trainer/comm/c10d_transport.hpp"

#include <vector>

namespace mtrain::trainer {

namespace {
// Gloo (1.13) rejects bf16. Moving bytes needs no arithmetic: a bf16 tensor travels
// with the same bits as fp16 (all-gather, broadcast, all-to-all only copy them; Gloo has no
// int16); sums go through an fp32 copy.
bool bits_only(const at::Tensor& t, bool flat_collectives) {
  return !flat_collectives && t.scalar_type() == at::kBFloat16;
}
at::Tensor as_bits(const at::Tensor& t) { return t.view(at::kHalf); }

Pending started(compat::WorkPtr w, std::function<void()> finish = {}) {
  Pending p;
  p.work = std::move(w);
  p.finish = std::move(finish);
  return p;
}
}  // namespace

C10dTransport::C10dTransport(compat::BackendPtr backend, int world, std::chrono::milliseconds timeout)
    : backend_(std::move(backend)), world_(world), timeout_(timeout),
      flat_collectives_(compat::has_flat_collectives(backend_)) {}

Pending C10dTransport::all_reduce(at::Tensor t) {
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  opts.timeout = timeout_;
  if (bits_only(t, flat_collectives_)) {
    at::Tensor wide = t.to(at::kFloat);
    std::vector<at::Tensor> ts{wide};
    return started(backend_->allreduce(ts, opts), [t, wide]() mutable { t.copy_(wide); });
  }
  std::vector<at::Tensor> ts{t};
  return started(backend_->allreduce(ts, opts));
}

Pending C10dTransport::reduce_scatter(at::Tensor input, at::Tensor output) {
  if (flat_collectives_) {
    c10d::ReduceScatterOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    opts.timeout = timeout_;
    return started(backend_->_reduce_scatter_base(output, input, opts));
  }
  // Gloo (1.13) has no reduce-scatter: an all-to-all sends chunk r to rank r (the same bytes a
  // ring reduce-scatter puts on the wire), then each rank sums the N chunks it received.
  const int64_t k = output.numel();
  auto recv = at::empty_like(input);
  std::vector<int64_t> splits;  // empty: equal splits
  c10d::AllToAllOptions opts;
  opts.timeout = timeout_;
  const bool bits = bits_only(input, false);
  at::Tensor send = bits ? as_bits(input) : input;
  at::Tensor into = bits ? as_bits(recv) : recv;
  auto w = backend_->alltoall_base(into, send, splits, splits, opts);
  return started(std::move(w), [recv, output, world = world_, k, bits]() mutable {
    if (bits) {
      output.copy_(recv.view({world, k}).to(at::kFloat).sum(0));
    } else {
      at::sum_out(output, recv.view({world, k}), 0);
    }
  });
}

Pending C10dTransport::all_gather(at::Tensor input, at::Tensor output) {
  c10d::AllgatherOptions opts;
  opts.timeout = timeout_;
  if (flat_collectives_) return started(backend_->_allgather_base(output, input, opts));
  // Gloo copies its result into the output list; views of the flat output make that the
  // final placement, with no copy of ours.
  const int64_t k = input.numel();
  const bool bits = bits_only(input, false);
  std::vector<std::vector<at::Tensor>> outs(1);
  for (int r = 0; r < world_; ++r) {
    at::Tensor o = output.narrow(0, r * k, k).view(input.sizes());
    outs[0].push_back(bits ? as_bits(o) : o);
  }
  std::vector<at::Tensor> ins{bits ? as_bits(input) : input};
  return started(backend_->allgather(outs, ins, opts));
}

Pending C10dTransport::broadcast(at::Tensor t, int root) {
  std::vector<at::Tensor> ts{bits_only(t, flat_collectives_) ? as_bits(t) : t};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  opts.rootTensor = 0;
  opts.timeout = timeout_;
  return started(backend_->broadcast(ts, opts));
}

Pending C10dTransport::barrier() {
  c10d::BarrierOptions opts;
  opts.timeout = timeout_;
  return started(backend_->barrier(opts));
}

}  // namespace mtrain::trainer
