#include "lib/trainer/model/compiled_part_function.hpp"

#include <torch/csrc/autograd/custom_function.h>

namespace mtrain::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct CompiledPartFunction : public torch::autograd::Function<CompiledPartFunction> {
  static variable_list forward(AutogradContext* ctx, const CompiledStage* part, at::TensorList inputs) {
    // The stage outlives the graph: the model owns it, and a graph never outlives a step.
    ctx->saved_data["stage"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(part));
    ctx->save_for_backward(inputs.vec());
    return {part->forward(inputs.vec()).at(0)};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto* part = reinterpret_cast<const CompiledStage*>(static_cast<intptr_t>(ctx->saved_data["stage"].toInt()));
    const variable_list inputs = ctx->get_saved_variables();
    variable_list grads(1 + inputs.size());  // the stage pointer's slot stays undefined
    const at::Tensor& grad = grad_outputs.at(0);
    if (!grad.defined()) return grads;
    std::vector<at::Tensor> args(inputs.begin(), inputs.end());
    if (part->kind != CompiledStage::Kind::Epilogue) args.push_back(grad.contiguous());
    const std::vector<at::Tensor> out = part->backward(args);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const size_t k = part->grad_of_input[i];
      if (k == CompiledStage::kNoGrad) continue;
      // The step program differentiates the loss itself: scaled by the incoming gradient (the
      // loss scale, a micro-batch weight), exact when that is 1.
      grads[1 + i] = part->kind == CompiledStage::Kind::Epilogue ? out[k] * grad : out[k];
    }
    return grads;
  }
};

}  // namespace

at::Tensor run_compiled_part(const CompiledStage& part, const std::vector<at::Tensor>& inputs) {
  return CompiledPartFunction::apply(&part, at::TensorList(inputs)).at(0);
}

}  // namespace mtrain::trainer
