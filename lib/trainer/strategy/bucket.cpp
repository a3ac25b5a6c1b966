#include "lib/trainer/strategy/bucket.hpp"

#include <torch/csrc/autograd/variable.h>
#include <ATen/core/grad_mode.h>

namespace mtrain::trainer {

std::vector<Bucket> plan_buckets(const std::vector<int64_t>& numels, int64_t element_size,
                                 double first_bucket_mb, double bucket_cap_mb) {
  const double mib = 1024.0 * 1024.0;
  std::vector<Bucket> out;
  Bucket cur;
  for (size_t k = numels.size(); k-- > 0;) {
    const double cap = (out.empty() ? first_bucket_mb : bucket_cap_mb) * mib;
    const int64_t bytes = numels[k] * element_size;
    if (!cur.entries.empty() && static_cast<double>((cur.numel * element_size) + bytes) > cap) {
      out.push_back(std::move(cur));
      cur = Bucket{};
    }
    cur.entries.push_back({k, cur.numel, numels[k]});
    cur.numel += numels[k];
  }
  if (!cur.entries.empty()) out.push_back(std::move(cur));
  return out;
}

void bind_buckets(std::vector<Bucket>& buckets, std::vector<at::Tensor>& params) {
  at::NoGradGuard no_grad;
  for (auto& b : buckets) {
    const auto& first = params.at(b.entries.front().param);
    b.params = at::empty({b.numel}, first.options());
    b.grads = at::zeros({b.numel}, first.options());
    for (const auto& e : b.entries) {
      auto& p = params[e.param];
      auto pview = b.params.narrow(0, e.offset, e.numel).view(p.sizes());
      pview.copy_(p);
      p.set_data(pview);
      p.mutable_grad() = b.grads.narrow(0, e.offset, e.numel).view(p.sizes());
    }
  }
}

}  // namespace mtrain::trainer
