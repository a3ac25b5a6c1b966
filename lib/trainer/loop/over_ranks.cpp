#include "lib/trainer/loop/over_ranks.hpp"

#include <cstdint>

namespace mtrain::trainer {

std::vector<double> sum_over_ranks(Communicator& comm, const at::Device& device, const std::vector<double>& v,
                                   const std::string& counter) {
  at::Tensor t = at::tensor(v, at::kDouble);
  if (!device.is_cpu()) t = t.to(device);
  comm.all_reduce(t, counter).wait();
  t = t.cpu();
  return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
}

std::vector<double> max_over_ranks(Communicator& comm, const at::Device& device, const std::vector<double>& v) {
  const int64_t k = static_cast<int64_t>(v.size());
  // Every rank passes the same number of figures, so none of them reaches the collective when
  // there are none (a view of {world, 0} has no maxima to take).
  if (k == 0) return {};
  at::Tensor mine = at::tensor(v, at::kDouble);
  at::Tensor all = at::empty({k * comm.world()}, at::kDouble);
  if (!device.is_cpu()) {
    mine = mine.to(device);
    all = all.to(device);
  }
  comm.all_gather(mine, all).wait();
  at::Tensor mx = std::get<0>(all.cpu().view({comm.world(), k}).max(0)).contiguous();
  return {mx.data_ptr<double>(), mx.data_ptr<double>() + k};
}

}  // namespace mtrain::trainer
