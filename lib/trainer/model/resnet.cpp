// resnet18 / resnet50, CIFAR variant: 3x3 stride-1 stem conv without max-pool, four stages
// "layer1".."layer4" of BasicBlocks [2,2,2,2] or Bottlenecks [3,4,6,3] (torchvision naming:
// conv1/bn1/…, "downsample.0/1" for the projection shortcut), global average pool, "fc".
// Convs are bias-free, kaiming-normal (fan_out) initialised; BatchNorm starts at (1, 0); fc uses
// PyTorch's default U(±1/sqrt(fan_in)). BatchNorm's running statistics are buffers, not
// parameters: they are per-rank state that data-parallel strategies do not average.
#include "lib/core/error.hpp"
#include "lib/trainer/model/layers.hpp"
#include "lib/trainer/model/models.hpp"
#include "lib/trainer/model/recompute.hpp"

#include <fmt/format.h>

namespace mtrain::trainer {
namespace {

using layers::BatchNorm2d;
using layers::Conv2d;
using layers::Init;

class Residual : public torch::nn::Module {
 public:
  explicit Residual(const char* kind) : torch::nn::Module(kind) {}
  virtual at::Tensor forward(const at::Tensor& x) = 0;

 protected:
  // Projection shortcut when the shape changes; identity otherwise.
  void make_downsample(int64_t in, int64_t out, int64_t stride, Init& init) {
    if (stride == 1 && in == out) return;
    auto seq = register_module("downsample", layers::container("Sequential"));
    ds_conv_ = seq->register_module("0", std::make_shared<Conv2d>(in, out, 1, stride, 0, init));
    ds_bn_ = seq->register_module("1", std::make_shared<BatchNorm2d>(out));
  }
  at::Tensor shortcut(const at::Tensor& x) {
    return ds_conv_ ? ds_bn_->forward(ds_conv_->forward(x)) : x;
  }

 private:
  std::shared_ptr<Conv2d> ds_conv_;
  std::shared_ptr<BatchNorm2d> ds_bn_;
};

class BasicBlock : public Residual {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlock(int64_t in, int64_t planes, int64_t stride, Init& init) : Residual("BasicBlock") {
    conv1 = register_module("conv1", std::make_shared<Conv2d>(in, planes, 3, stride, 1, init));
    bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(planes));
    conv2 = register_module("conv2", std::make_shared<Conv2d>(planes, planes, 3, 1, 1, init));
    bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(planes));
    make_downsample(in, planes, stride, init);
  }
  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor y = at::relu(bn1->forward(conv1->forward(x)));
    y = bn2->forward(conv2->forward(y));
    return at::relu(y + shortcut(x));
  }
  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<BatchNorm2d> bn1, bn2;
};

class Bottleneck : public Residual {
 public:
  static constexpr int64_t kExpansion = 4;
  Bottleneck(int64_t in, int64_t planes, int64_t stride, Init& init) : Residual("Bottleneck") {
    conv1 = register_module("conv1", std::make_shared<Conv2d>(in, planes, 1, 1, 0, init));
    bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(planes));
    conv2 = register_module("conv2", std::make_shared<Conv2d>(planes, planes, 3, stride, 1, init));
    bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(planes));
    conv3 = register_module("conv3",
                            std::make_shared<Conv2d>(planes, planes * kExpansion, 1, 1, 0, init));
    bn3 = register_module("bn3", std::make_shared<BatchNorm2d>(planes * kExpansion));
    make_downsample(in, planes * kExpansion, stride, init);
  }
  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor y = at::relu(bn1->forward(conv1->forward(x)));
    y = at::relu(bn2->forward(conv2->forward(y)));
    y = bn3->forward(conv3->forward(y));
    return at::relu(y + shortcut(x));
  }
  std::shared_ptr<Conv2d> conv1, conv2, conv3;
  std::shared_ptr<BatchNorm2d> bn1, bn2, bn3;
};

class ResNet : public TaskModel {
 public:
  ResNet(const ModelSpec& s, int depth, uint64_t seed) {
    Init init(seed);
    conv1 = register_module("conv1", std::make_shared<Conv2d>(3, 64, 3, 1, 1, init));
    bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(64));
    const bool basic = depth == 18;
    const int64_t counts18[4] = {2, 2, 2, 2}, counts50[4] = {3, 4, 6, 3};
    const int64_t expansion = basic ? BasicBlock::kExpansion : Bottleneck::kExpansion;
    int64_t in = 64;
    for (int stage = 0; stage < 4; ++stage) {
      const std::string stage_name = "layer" + std::to_string(stage + 1);
      auto seq = register_module(stage_name, layers::container("Sequential"));
      const int64_t planes = int64_t{64} << stage;
      const int64_t blocks = basic ? counts18[stage] : counts50[stage];
      for (int64_t i = 0; i < blocks; ++i) {
        const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
        std::shared_ptr<Residual> block;
        if (basic)
          block = std::make_shared<BasicBlock>(in, planes, stride, init);
        else
          block = std::make_shared<Bottleneck>(in, planes, stride, init);
        blocks_.push_back(seq->register_module(std::to_string(i), block));
        prefixes_.push_back(stage_name + "." + std::to_string(i));
        in = planes * expansion;
      }
    }
    fc = register_module("fc", std::make_shared<layers::Dense>(in, s.num_classes, true, init));
  }

  // images float [B, 3, H, W] (H, W >= 8 keep every stage non-empty; CIFAR: 32) → [B, classes].
  at::Tensor forward(const at::Tensor& images) override {
    if (images.dim() != 4 || images.size(1) != 3)
      throw UsageError(fmt::format("resnet expects images [batch, 3, H, W], got {}", shape_of(images)));
    at::Tensor x = at::relu(bn1->forward(conv1->forward(images)));
    const bool recompute = recompute_now();
    for (auto& b : blocks_) {
      x = recompute ? run_checkpointed([b](const at::Tensor& t) { return b->forward(t); }, x, b)
                    : b->forward(x);
    }
    return fc->forward(x.mean({2, 3}));
  }

  at::Tensor loss(const Batch& b) override { return cross_entropy(forward(b.input), b.target); }
  EvalStats evaluate(const Batch& b) override {
    return evaluate_with(*this, [&] { return classifier_stats(forward(b.input), b.target); });
  }
  bool is_language_model() const override { return false; }
  int64_t tokens_per_sample() const override { return 1; }
  std::vector<std::string> block_prefixes() const override { return prefixes_; }

  std::shared_ptr<Conv2d> conv1;
  std::shared_ptr<BatchNorm2d> bn1;
  std::shared_ptr<layers::Dense> fc;

 private:
  std::vector<std::shared_ptr<Residual>> blocks_;
  std::vector<std::string> prefixes_;
};

}  // namespace

std::shared_ptr<TaskModel> make_resnet(const ModelSpec& s, int depth, uint64_t seed) {
  if (depth != 18 && depth != 50)
    throw UsageError(fmt::format("resnet depth {} is not built in (18 or 50)", depth)).at("model.name");
  if (s.num_classes < 2)
    throw UsageError(fmt::format("resnet num_classes {} is below 2", s.num_classes)).at("model.num_classes");
  return std::make_shared<ResNet>(s, depth, seed);
}

}  // namespace mtrain::trainer
