#include "lib/trainer/comm/shm_transport.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::trainer {

namespace {
// The segment's collectives work on raw floats; the tensors they read and write are kept alive
// with the future until the collective is done.
Pending local(std::shared_future<void> f) {
  Pending p;
  p.local = std::move(f);
  p.via = "shared memory";
  return p;
}
}  // namespace

bool ShmTransport::takes(const at::Tensor& t) const { return t.scalar_type() == at::kFloat && t.device().is_cpu(); }

Pending ShmTransport::all_reduce(at::Tensor t) {
  float* data = t.data_ptr<float>();
  const int64_t n = t.numel();
  return local(shm_->all_reduce(data, n, std::make_shared<at::Tensor>(std::move(t))));
}

Pending ShmTransport::reduce_scatter(at::Tensor input, at::Tensor output) {
  const int64_t k = output.numel();
  float* in = input.data_ptr<float>();
  float* out = output.data_ptr<float>();
  return local(shm_->reduce_scatter(in, out, k, std::make_shared<std::pair<at::Tensor, at::Tensor>>(input, output)));
}

Pending ShmTransport::all_gather(at::Tensor input, at::Tensor output) {
  const int64_t k = input.numel();
  float* in = input.data_ptr<float>();
  float* out = output.data_ptr<float>();
  return local(shm_->all_gather(in, out, k, std::make_shared<std::pair<at::Tensor, at::Tensor>>(input, output)));
}

Pending ShmTransport::reduce_scatter_pieces(std::vector<at::Tensor> pieces, const std::vector<int64_t>& offsets,
                                            at::Tensor output) {
  const int64_t k = output.numel();
  if (!takes(output) || pieces.size() != offsets.size()) {
    throw RuntimeFailure("reduce_scatter_pieces: needs an fp32 CPU output and one offset per piece");
  }
  std::vector<ShmCollectives::Piece> in;
  in.reserve(pieces.size());
  int64_t end = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const at::Tensor& t = pieces[i];
    if (!takes(t) || !t.is_contiguous() || offsets[i] < end || offsets[i] + t.numel() > k * world_) {
      throw RuntimeFailure(
          fmt::format("reduce_scatter_pieces: piece {} ({} elements at {}) is not an fp32 CPU contiguous "
                      "tensor inside [{}, {}) after the piece before",
                      i, t.numel(), offsets[i], end, k * world_));
    }
    in.push_back({offsets[i], t.data_ptr<float>(), t.numel()});
    end = offsets[i] + t.numel();
  }
  float* out = output.data_ptr<float>();
  return local(shm_->reduce_scatter_pieces(
      std::move(in), out, k,
      std::make_shared<std::pair<std::vector<at::Tensor>, at::Tensor>>(std::move(pieces), std::move(output))));
}

}  // namespace mtrain::trainer
