#pragma once
// A transport moves the bytes of one collective: the c10d backend (Gloo or NCCL; c10d_transport)
// or, between ranks of one host, the shared-memory segment (shm_transport). The communicator picks
// one per call — the shared-memory one where it takes every tensor of the call, else c10d — and
// owns what every transport shares: the byte counters, the sequence numbers that name an absent
// rank, the timeout and the error text (communicator.hpp).
#include <functional>
#include <future>
#include <string>

#include "lib/trainer/comm/compat.hpp"

namespace mtrain::trainer {

// A collective a transport started: a c10d work item, or a shared-memory future, and what is left
// to do after the bytes arrived (e.g. the sum of an emulated reduce-scatter).
struct Pending {
  compat::WorkPtr work;
  std::shared_future<void> local;
  std::function<void()> finish;
  const char* via = "";  // shown after the collective's name in errors ("shared memory"); "" for c10d
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Whether this transport can move `t` (dtype, device).
  virtual bool takes(const at::Tensor& t) const = 0;
  // Sum over ranks, in place.
  virtual Pending all_reduce(at::Tensor t) = 0;
  // input: world·k elements; output: k elements (this rank's slice of the sum).
  virtual Pending reduce_scatter(at::Tensor input, at::Tensor output) = 0;
  // input: k elements; output: world·k elements, rank r's input at [r·k, (r+1)·k).
  virtual Pending all_gather(at::Tensor input, at::Tensor output) = 0;
};

}  // namespace mtrain::trainer
