#include "lib/trainer/model/layers.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>

namespace mtrain::trainer::layers {

Init::Init(uint64_t seed) : gen_(at::detail::createCPUGenerator(seed)) {}

void Init::normal(at::Tensor& t, double std) {
  at::NoGradGuard no_grad;
  t.normal_(0.0, std, gen_);
}

void Init::uniform(at::Tensor& t, double bound) {
  at::NoGradGuard no_grad;
  t.uniform_(-bound, bound, gen_);
}

void Init::fill(at::Tensor& t, double value) {
  at::NoGradGuard no_grad;
  t.fill_(value);
}

Dense::Dense(int64_t in, int64_t out, bool has_bias, Init& init, double std)
    : torch::nn::Module("Dense") {
  weight = register_parameter("weight", at::empty({out, in}));
  if (std > 0) {
    init.normal(weight, std);
  } else {
    init.uniform(weight, 1.0 / std::sqrt(static_cast<double>(in)));
  }
  if (has_bias) {
    bias = register_parameter("bias", at::empty({out}));
    if (std > 0) {
      Init::fill(bias, 0.0);
    } else {
      init.uniform(bias, 1.0 / std::sqrt(static_cast<double>(in)));
    }
  }
}

at::Tensor Dense::forward(const at::Tensor& x) const { return at::linear(x, weight, bias); }

LayerNorm::LayerNorm(int64_t dim) : torch::nn::Module("LayerNorm"), dim_(dim) {
  weight = register_parameter("weight", at::ones({dim}));
  bias = register_parameter("bias", at::zeros({dim}));
}

at::Tensor LayerNorm::forward(const at::Tensor& x) const {
  return at::layer_norm(x, {dim_}, weight, bias, 1e-5);
}

Embedding::Embedding(int64_t num, int64_t dim, Init& init, double std)
    : torch::nn::Module("Embedding") {
  weight = register_parameter("weight", at::empty({num, dim}));
  init.normal(weight, std);
}

at::Tensor Embedding::forward(const at::Tensor& idx) const { return at::embedding(weight, idx); }

Conv2d::Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding,
               Init& init)
    : torch::nn::Module("Conv2d"), stride_(stride), padding_(padding) {
  weight = register_parameter("weight", at::empty({out, in, kernel, kernel}));
  init.normal(weight, std::sqrt(2.0 / static_cast<double>(out * kernel * kernel)));
}

at::Tensor Conv2d::forward(const at::Tensor& x) const {
  return at::conv2d(x, weight, {}, {stride_, stride_}, {padding_, padding_});
}

BatchNorm2d::BatchNorm2d(int64_t channels) : torch::nn::Module("BatchNorm2d") {
  weight = register_parameter("weight", at::ones({channels}));
  bias = register_parameter("bias", at::zeros({channels}));
  running_mean = register_buffer("running_mean", at::zeros({channels}));
  running_var = register_buffer("running_var", at::ones({channels}));
}

at::Tensor BatchNorm2d::forward(const at::Tensor& x) {
  return at::batch_norm(x, weight, bias, running_mean, running_var, is_training(), 0.1, 1e-5,
                        /*cudnn_enabled=*/true);
}

std::shared_ptr<torch::nn::Module> container(const std::string& kind) {
  return std::make_shared<torch::nn::Module>(kind);
}

}  // namespace mtrain::trainer::layers
