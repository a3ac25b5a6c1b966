#include "lib/trainer/model/compiled_part_function.hpp"

#include <algorithm>

#include <torch/csrc/autograd/custom_function.h>

namespace mtrain::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct CompiledPartFunction : public torch::autograd::Function<CompiledPartFunction> {
  static variable_list forward(AutogradContext* ctx, const CompiledStage* part, at::TensorList inputs, bool train) {
    // The stage outlives the graph: the model owns it, and a graph never outlives a step.
    ctx->saved_data["stage"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(part));
    ctx->save_for_backward(inputs.vec());
    if (part->kind == CompiledStage::Kind::Epilogue && train) {
      // The step program gives the loss and its gradients at once; running the forward program
      // too would compute the epilogue (the vocabulary projection, the loss) twice a step. The
      // loss itself is not kept: an output held by its own node would never be freed.
      std::vector<at::Tensor> out = part->backward(inputs.vec());
      ctx->saved_data["grads"] = std::vector<at::Tensor>(out.begin() + 1, out.end());
      return {out.at(0)};
    }
    std::vector<at::Tensor> out = part->forward(inputs.vec());
    if (train && out.size() > 1) ctx->saved_data["activations"] = std::vector<at::Tensor>(out.begin() + 1, out.end());
    return {out.at(0)};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto* part = reinterpret_cast<const CompiledStage*>(static_cast<intptr_t>(ctx->saved_data["stage"].toInt()));
    const variable_list inputs = ctx->get_saved_variables();
    variable_list grads(2 + inputs.size());  // the stage pointer's and the flag's slots stay undefined
    const at::Tensor& grad = grad_outputs.at(0);
    if (!grad.defined()) return grads;
    std::vector<at::Tensor> out;
    if (part->kind == CompiledStage::Kind::Epilogue) {
      out = ctx->saved_data.at("grads").toTensorVector();
      out.insert(out.begin(), at::Tensor());  // where the step program's loss was
    } else {
      std::vector<at::Tensor> args(inputs.begin(), inputs.end());
      auto saved = ctx->saved_data.find("activations");
      if (saved != ctx->saved_data.end()) {
        const std::vector<at::Tensor> acts = saved->second.toTensorVector();
        args.insert(args.end(), acts.begin(), acts.end());
      }
      args.push_back(grad.contiguous());
      out = part->backward(args);
    }
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
  const bool train = at::GradMode::is_enabled() &&
                     std::any_of(inputs.begin(), inputs.end(), [](const at::Tensor& t) { return t.requires_grad(); });
  return CompiledPartFunction::apply(&part, at::TensorList(inputs), train).at(0);
}

}  // namespace mtrain::trainer
