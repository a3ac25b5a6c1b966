#include "lib/trainer/strategy/precision.hpp"

namespace mtrain::trainer {

PrecisionPolicy precision_policy(config::Precision name) {
  PrecisionPolicy p;
  p.name = name;
  switch (name) {
    case config::Precision::Fp32: return p;
    case config::Precision::Bf16: p.param = p.reduce = at::kBFloat16; return p;
    case config::Precision::Fp16:
      p.param = p.reduce = at::kHalf;
      p.loss_scaling = true;
      return p;
  }
  config::no_such_value(name);
}

}  // namespace mtrain::trainer
