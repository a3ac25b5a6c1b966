#include "mtrain/trainer/strategy/precision.hpp"

#include "mtrain/core/error.hpp"

namespace mtrain::trainer {

PrecisionPolicy precision_policy(const std::string& name) {
  PrecisionPolicy p;
  p.name = name;
  if (name == "fp32") return p;
  if (name == "bf16") {
    p.param = p.reduce = at::kBFloat16;
    return p;
  }
  if (name == "fp16") {
    p.param = p.reduce = at::kHalf;
    p.loss_scaling = true;
    return p;
  }
  throw Error("train.precision '" + name + "' is not one of fp32, bf16, fp16",
              "set train.precision to fp32, bf16 or fp16");
}

}  // namespace mtrain::trainer
