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

std::pair<MemoryLedger, int64_t> fullest_over_ranks(Communicator& comm, const at::Device& device, const MemoryLedger& m,
                                                    int64_t peak) {
  const std::vector<int64_t> mine = {
      m.params, m.grads, m.optimizer, m.gathered, m.gathered_peak, m.unsharded_grads_peak, m.transient_peak, peak};
  std::vector<double> v(mine.begin(), mine.end());
  v = max_over_ranks(comm, device, v);
  const auto at = [&v](size_t i) { return static_cast<int64_t>(v[i]); };
  return {MemoryLedger{at(0), at(1), at(2), at(3), at(4), at(5), at(6)}, at(7)};
}

}  // namespace mtrain::trainer
