#pragma once
// Constructors of the concrete models (internal to lib/trainer/model; make_model is the API).
#include "lib/trainer/model/model.hpp"

namespace mtrain::trainer {

std::shared_ptr<TaskModel> make_mlp(const ModelSpec& spec, uint64_t seed);
std::shared_ptr<TaskModel> make_gpt(const ModelSpec& spec, uint64_t seed);
std::shared_ptr<TaskModel> make_resnet(const ModelSpec& spec, int depth, uint64_t seed);
std::shared_ptr<TaskModel> make_torchscript(const ModelSpec& spec);
std::shared_ptr<TaskModel> make_compiled(const ModelSpec& spec);

// Shared by the classifiers: summed cross-entropy and argmax hits of logits [N, C] vs int64 [N].
EvalStats classifier_stats(const at::Tensor& logits, const at::Tensor& target);
// Mean cross-entropy, computed in fp32 whatever the logits' dtype.
at::Tensor cross_entropy(const at::Tensor& logits, const at::Tensor& target);

// "2x3x32x32", for error messages.
std::string shape_of(const at::Tensor& t);

// Runs `fn` in eval mode without autograd, restoring the module's mode afterwards.
template <typename Fn>
EvalStats evaluate_with(torch::nn::Module& m, Fn&& fn);

}  // namespace mtrain::trainer

#include <torch/csrc/autograd/grad_mode.h>

namespace mtrain::trainer {

template <typename Fn>
EvalStats evaluate_with(torch::nn::Module& m, Fn&& fn) {
  const bool was_training = m.is_training();
  m.eval();
  struct Restore {
    torch::nn::Module& m;
    bool training;
    ~Restore() { m.train(training); }
  } restore{m, was_training};
  at::NoGradGuard no_grad;
  return fn();
}

}  // namespace mtrain::trainer
