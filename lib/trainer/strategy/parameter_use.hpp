#pragma once
// The explicit "in use / done" call of code that reads parameters without the dispatcher.
// The sharded engine learns that a unit is used from the op-input callback (sharded_engine.hpp's
// gather-on-use protocol), which sees the inputs of every ATen operator. An AOTInductor-compiled
// program (model.name compiled) runs its own kernels: the callback sees none of the parameters
// it reads (a profiled unit shows only the loader's boxed_run). Its caller announces them here,
// before the call: for the life of the returned handle the engine treats `tensors` as the
// inputs of one running operator — the units holding any of them are gathered (in forward and in
// backward, with the prefetch and release that follow a use) and none is released until the
// handle goes. Tensors of no non-resident unit (activations, resident units, no sharded engine)
// cost one lookup and return an empty handle.
#include <memory>
#include <vector>

#include <ATen/ATen.h>

namespace mtrain::trainer {

[[nodiscard]] std::shared_ptr<void> use_parameters(const std::vector<at::Tensor>& tensors);

}  // namespace mtrain::trainer
