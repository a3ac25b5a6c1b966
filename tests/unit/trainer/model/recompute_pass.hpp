#pragma once
// One training pass of a model for the activation checkpointing tests (test_recompute.cpp for
// the built-in models, test_scripted_recompute.cpp for TorchScript ones): loss, gradients,
// buffers, the next random numbers and the bytes kept for backward, to compare a checkpointed
// model with a plain one.
#include <catch2/catch.hpp>

#include "helpers.hpp"

namespace mtrain::trainer::testing {

struct Pass {
  double loss = 0;
  int64_t kept_bytes = 0;  // allocated between the start of forward and the start of backward
  std::vector<at::Tensor> grads, buffers;
  at::Tensor next_random;
};

inline Pass run(TaskModel& m, const Batch& b) {
  auto& alloc = counting_allocator();
  at::manual_seed(11);
  m.zero_grad();
  const int64_t before = alloc.live();
  at::Tensor loss = m.loss(b);
  Pass p;
  p.kept_bytes = alloc.live() - before;
  loss.backward();
  p.loss = loss.item<double>();
  for (const auto& t : m.parameters()) p.grads.push_back(t.grad().clone());
  for (const auto& t : m.buffers()) p.buffers.push_back(t.clone());
  p.next_random = at::rand({4});
  return p;
}

// The checkpointed pass `c` did what the plain pass `p` did: same loss, gradients and buffers
// (BatchNorm statistics updated once, not again by the recompute), and the recompute put back
// the RNG state it borrowed.
inline void check_same_pass(const Pass& p, const Pass& c) {
  CHECK(c.loss == p.loss);
  REQUIRE(c.grads.size() == p.grads.size());
  for (size_t i = 0; i < p.grads.size(); ++i) {
    INFO("parameter " << i);
    CHECK(at::equal(c.grads[i], p.grads[i]));
  }
  REQUIRE(c.buffers.size() == p.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    INFO("buffer " << i);
    CHECK(at::equal(c.buffers[i], p.buffers[i]));
  }
  CHECK(at::equal(c.next_random, p.next_random));
}

}  // namespace mtrain::trainer::testing
