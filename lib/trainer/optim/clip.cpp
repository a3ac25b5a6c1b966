#include "lib/trainer/optim/clip.hpp"

#include <cmath>

#include "lib/trainer/comm/communicator.hpp"

namespace mtrain::trainer {

double global_grad_norm(const std::vector<at::Tensor>& grads, Communicator* sum_over) {
  double sq = 0;
  for (const auto& g : grads) {
    if (g.numel() == 0) continue;
    const double n = g.norm().item<double>();
    sq += n * n;
  }
  if (sum_over != nullptr && sum_over->world() > 1) {
    at::Tensor total = at::full({1}, sq, at::kDouble);
    sum_over->all_reduce(total, "all_reduce(grad_norm)").wait();
    sq = total.item<double>();
  }
  return std::sqrt(sq);
}

double clip_grad_norm(const std::vector<at::Tensor>& grads, double max_norm,
                      Communicator* sum_over) {
  const double norm = global_grad_norm(grads, sum_over);
  if (max_norm > 0) {
    const double coef = max_norm / (norm + 1e-6);
    if (coef < 1.0) {
      for (const auto& g : grads) g.mul_(coef);
    }
  }
  return norm;
}

}  // namespace mtrain::trainer
