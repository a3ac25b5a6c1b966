#include "lib/trainer/strategy/source_check.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::trainer {

void require_source_tensor(const TensorSource& src, const std::string& name, at::IntArrayRef shape) {
  if (!src.has(name)) {
    throw UsageError("the checkpoint has no tensor '" + name + "'",
                     "it was written for a different model or optimiser; resume with the same "
                     "model.* and optim.name settings");
  }
  if (src.shape(name) != shape.vec()) {
    throw UsageError(fmt::format("checkpoint tensor '{}' has shape {}, the model has {}", name,
                                 fmt::join(src.shape(name), "x"), fmt::join(shape, "x")),
                     "resume with the same model.* settings");
  }
}

}  // namespace mtrain::trainer
