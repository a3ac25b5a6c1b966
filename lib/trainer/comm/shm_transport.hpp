#pragma once
// The shared-memory transport: fp32 CPU tensors of ranks on one host, reduced and gathered in one
// segment every rank maps (shm_collectives.hpp) instead of through Gloo's sockets.
#include <memory>
#include <vector>

#include "lib/trainer/comm/shm_collectives.hpp"
#include "lib/trainer/comm/transport.hpp"

namespace mtrain::trainer {

class ShmTransport final : public Transport {
 public:
  explicit ShmTransport(std::unique_ptr<ShmCollectives> shm, int world) : shm_(std::move(shm)), world_(world) {}
  bool takes(const at::Tensor& t) const override;
  Pending all_reduce(at::Tensor t) override;
  Pending reduce_scatter(at::Tensor input, at::Tensor output) override;
  Pending all_gather(at::Tensor input, at::Tensor output) override;
  // A reduce-scatter whose world·k-element input is given as pieces at ascending `offsets`
  // (zeros elsewhere), read where they lie: the caller need not flatten them first. Only this
  // transport offers it.
  Pending reduce_scatter_pieces(std::vector<at::Tensor> pieces, const std::vector<int64_t>& offsets, at::Tensor output);

 private:
  std::unique_ptr<ShmCollectives> shm_;
  int world_;
};

}  // namespace mtrain::trainer
