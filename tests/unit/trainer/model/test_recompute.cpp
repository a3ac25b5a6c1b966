// Activation checkpointing: gradients (and BatchNorm statistics, and the RNG stream) identical
// to the plain model, while far fewer bytes stay allocated for backward after the forward.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "model/recompute_pass.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;

namespace {

void compare(const ModelSpec& spec, const Batch& b) {
  auto plain = make_model(spec, 3), ckpt = make_model(spec, 3);
  ckpt->set_activation_checkpointing(true);
  plain->train();
  ckpt->train();
  counting_allocator();  // installed before either forward
  const Pass p = run(*plain, b);
  const Pass c = run(*ckpt, b);
  INFO(mtrain::config::to_string(spec.name) << ": bytes kept for backward " << p.kept_bytes << " plain, " << c.kept_bytes
                 << " checkpointed");
  check_same_pass(p, c);
  CHECK(c.kept_bytes < p.kept_bytes / 2);
  WARN(mtrain::config::to_string(spec.name) << ": bytes kept for backward " << p.kept_bytes << " plain vs " << c.kept_bytes
                 << " with activation checkpointing");
}

}  // namespace

TEST_CASE("activation checkpointing: same gradients, less kept for backward (gpt with dropout)",
          "[recompute]") {
  at::set_num_threads(1);
  ModelSpec s;
  s.name = mtrain::config::ModelName::Gpt;
  s.n_layer = 4;
  s.n_head = 2;
  s.n_embd = 32;
  s.block_size = 32;
  s.vocab_size = 256;
  s.dropout = 0.1;
  at::manual_seed(1);
  Batch b{at::randint(0, 256, {4, 32}, at::kLong), at::randint(0, 256, {4, 32}, at::kLong)};
  compare(s, b);
}

TEST_CASE("activation checkpointing: same gradients and BatchNorm statistics (resnet18)",
          "[recompute]") {
  at::set_num_threads(1);
  ModelSpec s;
  s.name = mtrain::config::ModelName::Resnet18;
  s.num_classes = 10;
  at::manual_seed(2);
  Batch b{at::randn({4, 3, 16, 16}), at::randint(0, 10, {4}, at::kLong)};
  compare(s, b);
}

TEST_CASE("activation checkpointing is inert in eval and without autograd", "[recompute]") {
  at::set_num_threads(1);
  ModelSpec s;
  s.name = mtrain::config::ModelName::Gpt;
  s.n_layer = 2;
  s.n_head = 2;
  s.n_embd = 16;
  s.block_size = 8;
  s.vocab_size = 32;
  auto plain = make_model(s, 3), ckpt = make_model(s, 3);
  ckpt->set_activation_checkpointing(true);
  CHECK(ckpt->activation_checkpointing());
  const at::Tensor x = at::randint(0, 32, {2, 8}, at::kLong);
  Batch b{x, x};
  const EvalStats e1 = plain->evaluate(b), e2 = ckpt->evaluate(b);
  CHECK(e1.loss_sum == e2.loss_sum);
  CHECK(e1.correct == e2.correct);
}
