#pragma once
// The c10d transport: Gloo on CPU, NCCL in CUDA builds, through the backend compat.hpp makes.
// It takes every tensor; where a backend lacks a collective or a dtype (Gloo of LibTorch 1.13:
// no reduce-scatter, no flat all-gather, no bf16) it emulates it with the same bytes on the wire.
#include <chrono>

#include "lib/trainer/comm/transport.hpp"

namespace mtrain::trainer {

class C10dTransport final : public Transport {
 public:
  C10dTransport(compat::BackendPtr backend, int world, std::chrono::milliseconds timeout);
  bool takes(const at::Tensor&) const override { return true; }
  Pending all_reduce(at::Tensor t) override;
  Pending reduce_scatter(at::Tensor input, at::Tensor output) override;
  Pending all_gather(at::Tensor input, at::Tensor output) override;
  Pending broadcast(at::Tensor t, int root);
  Pending barrier();

 private:
  compat::BackendPtr backend_;
  int world_;
  std::chrono::milliseconds timeout_;
  bool flat_collectives_;
};

}  // namespace mtrain::trainer
