#pragma once
// The few layers the bundled models need, written over ATen functions with explicit
// parameters. Why not torch::nn::Linear & co.: their constructors initialise from the global
// RNG (advancing the loop's dropout stream) before we overwrite them, and their option structs
// differ between LibTorch versions. Here every parameter is drawn exactly once, from the
// caller's seeded generator, in construction order.
#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <string>

namespace mtrain::trainer::layers {

// Seeded initialisers; all write in place under a no-grad guard.
class Init {
 public:
  explicit Init(uint64_t seed);
  void normal(at::Tensor& t, double std);
  void uniform(at::Tensor& t, double bound);  // U(-bound, bound)
  static void fill(at::Tensor& t, double value);

 private:
  at::Generator gen_;
};

class Dense : public torch::nn::Module {
 public:
  // weight/bias ~ U(±1/sqrt(in)) (PyTorch's default); std > 0 switches to normal(0, std) with
  // zero bias (GPT-2 style).
  Dense(int64_t in, int64_t out, bool bias, Init& init, double std = 0);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor weight, bias;
};

class LayerNorm : public torch::nn::Module {
 public:
  explicit LayerNorm(int64_t dim);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor weight, bias;

 private:
  int64_t dim_;
};

class Embedding : public torch::nn::Module {
 public:
  Embedding(int64_t num, int64_t dim, Init& init, double std);
  at::Tensor forward(const at::Tensor& idx) const;
  at::Tensor weight;
};

// Bias-free square convolution; weight ~ kaiming normal (fan_out, ReLU) as torchvision does.
class Conv2d : public torch::nn::Module {
 public:
  Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding, Init& init);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor weight;

 private:
  int64_t stride_, padding_;
};

// Batch statistics in training mode, running statistics (buffers) in eval mode.
class BatchNorm2d : public torch::nn::Module {
 public:
  explicit BatchNorm2d(int64_t channels);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight, bias, running_mean, running_var;
};

// A parameterless container, so children get dotted names "<name>.<i>" like nn.ModuleList.
std::shared_ptr<torch::nn::Module> container(const std::string& kind);

}  // namespace mtrain::trainer::layers
