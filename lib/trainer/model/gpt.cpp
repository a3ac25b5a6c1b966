// gpt: a decoder-only transformer in the GPT-2 layout (nanoGPT naming).
//   wte (token) + wpe (learned position) embeddings → dropout → n_layer pre-LN blocks
//   "blocks.<i>" {ln_1, attn{c_attn, c_proj}, ln_2, mlp{c_fc, c_proj}} → ln_f → lm_head.
// The head is UNTIED from wte (its own [vocab, n_embd] weight, no bias): shared parameters would
// appear once in named_parameters() yet be used twice, which every sharding strategy would have
// to special-case. Attention is written with matmuls and a causal mask (no fused SDPA), so it
// behaves the same on LibTorch 1.13 and 2.x. Init: normal(0, 0.02) for every weight matrix and
// embedding, 0.02/sqrt(2·n_layer) for the residual projections (GPT-2), zero biases, LN = (1, 0).
#include "lib/core/error.hpp"
#include "lib/trainer/model/layers.hpp"
#include "lib/trainer/model/models.hpp"
#include "lib/trainer/model/recompute.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace mtrain::trainer {
namespace {

using layers::Dense;
using layers::Init;
using layers::LayerNorm;

at::Tensor maybe_dropout(const at::Tensor& x, double p, bool training) {
  return (p > 0 && training) ? at::dropout(x, p, true) : x;
}

class CausalSelfAttention : public torch::nn::Module {
 public:
  CausalSelfAttention(const ModelSpec& s, Init& init, double proj_std)
      : torch::nn::Module("CausalSelfAttention"), n_head_(s.n_head), dropout_(s.dropout) {
    c_attn = register_module("c_attn", std::make_shared<Dense>(s.n_embd, 3 * s.n_embd, true,
                                                               init, 0.02));
    c_proj = register_module("c_proj",
                             std::make_shared<Dense>(s.n_embd, s.n_embd, true, init, proj_std));
  }

  at::Tensor forward(const at::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hd = C / n_head_;
    auto qkv = c_attn->forward(x).split(C, 2);
    auto heads = [&](const at::Tensor& t) { return t.reshape({B, T, n_head_, hd}).transpose(1, 2); };
    const at::Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);  // [B, nh, T, hd]
    at::Tensor att = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
    // Position t may attend to positions <= t only.
    const at::Tensor future =
        at::ones({T, T}, at::TensorOptions().dtype(at::kBool).device(x.device())).triu(1);
    att = att.masked_fill(future, -std::numeric_limits<double>::infinity());
    att = maybe_dropout(at::softmax(att, -1), dropout_, is_training());
    at::Tensor y = at::matmul(att, v).transpose(1, 2).reshape({B, T, C});
    return maybe_dropout(c_proj->forward(y), dropout_, is_training());
  }

  std::shared_ptr<Dense> c_attn, c_proj;

 private:
  int64_t n_head_;
  double dropout_;
};

class FeedForward : public torch::nn::Module {
 public:
  FeedForward(const ModelSpec& s, Init& init, double proj_std)
      : torch::nn::Module("MLP"), dropout_(s.dropout) {
    c_fc = register_module("c_fc", std::make_shared<Dense>(s.n_embd, 4 * s.n_embd, true, init, 0.02));
    c_proj = register_module("c_proj",
                             std::make_shared<Dense>(4 * s.n_embd, s.n_embd, true, init, proj_std));
  }
  at::Tensor forward(const at::Tensor& x) {
    return maybe_dropout(c_proj->forward(at::gelu(c_fc->forward(x))), dropout_, is_training());
  }
  std::shared_ptr<Dense> c_fc, c_proj;

 private:
  double dropout_;
};

class Block : public torch::nn::Module {
 public:
  Block(const ModelSpec& s, Init& init, double proj_std) : torch::nn::Module("Block") {
    ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(s.n_embd));
    attn = register_module("attn", std::make_shared<CausalSelfAttention>(s, init, proj_std));
    ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(s.n_embd));
    mlp = register_module("mlp", std::make_shared<FeedForward>(s, init, proj_std));
  }
  at::Tensor forward(at::Tensor x) {
    x = x + attn->forward(ln_1->forward(x));
    return x + mlp->forward(ln_2->forward(x));
  }
  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<FeedForward> mlp;
};

class Gpt : public TaskModel {
 public:
  Gpt(const ModelSpec& s, uint64_t seed) : spec_(s) {
    Init init(seed);
    const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(s.n_layer));
    wte = register_module("wte", std::make_shared<layers::Embedding>(s.vocab_size, s.n_embd, init, 0.02));
    wpe = register_module("wpe", std::make_shared<layers::Embedding>(s.block_size, s.n_embd, init, 0.02));
    auto list = register_module("blocks", layers::container("ModuleList"));
    for (int64_t i = 0; i < s.n_layer; ++i)
      blocks.push_back(
          list->register_module(std::to_string(i), std::make_shared<Block>(s, init, proj_std)));
    ln_f = register_module("ln_f", std::make_shared<LayerNorm>(s.n_embd));
    lm_head = register_module("lm_head",
                              std::make_shared<Dense>(s.n_embd, s.vocab_size, false, init, 0.02));
  }

  // tokens int64 [B, T], T <= block_size → logits [B, T, vocab].
  at::Tensor forward(const at::Tensor& tokens) override {
    if (tokens.dim() != 2 || tokens.size(1) > spec_.block_size || tokens.size(1) < 1)
      throw UsageError(fmt::format("gpt expects token ids [batch, T] with 1 <= T <= block_size {}, got {}",
                                   spec_.block_size, shape_of(tokens)));
    const int64_t T = tokens.size(1);
    const at::Tensor pos = at::arange(T, at::TensorOptions().dtype(at::kLong).device(tokens.device()));
    at::Tensor x = wte->forward(tokens) + wpe->forward(pos);
    x = maybe_dropout(x, spec_.dropout, is_training());
    const bool recompute = recompute_now();
    for (auto& b : blocks) {
      x = recompute ? run_checkpointed([b](const at::Tensor& t) { return b->forward(t); }, x, b)
                    : b->forward(x);
    }
    return lm_head->forward(ln_f->forward(x));
  }

  at::Tensor loss(const Batch& b) override {
    const at::Tensor logits = forward(b.input);
    return cross_entropy(logits.reshape({-1, logits.size(-1)}), b.target.reshape({-1}));
  }
  EvalStats evaluate(const Batch& b) override {
    return evaluate_with(*this, [&] {
      const at::Tensor logits = forward(b.input);
      return classifier_stats(logits.reshape({-1, logits.size(-1)}), b.target.reshape({-1}));
    });
  }
  bool is_language_model() const override { return true; }
  int64_t tokens_per_sample() const override { return spec_.block_size; }
  std::vector<std::string> block_prefixes() const override {
    std::vector<std::string> out;
    for (size_t i = 0; i < blocks.size(); ++i) out.push_back("blocks." + std::to_string(i));
    return out;
  }

  std::shared_ptr<layers::Embedding> wte, wpe;
  std::vector<std::shared_ptr<Block>> blocks;
  std::shared_ptr<LayerNorm> ln_f;
  std::shared_ptr<Dense> lm_head;

 private:
  ModelSpec spec_;
};

}  // namespace

std::shared_ptr<TaskModel> make_gpt(const ModelSpec& s, uint64_t seed) {
  if (s.n_layer < 1 || s.n_head < 1 || s.n_embd < 1 || s.block_size < 1 || s.vocab_size < 2)
    throw UsageError("gpt needs n_layer, n_head, n_embd, block_size >= 1 and vocab_size >= 2").at("model");
  if (s.n_embd % s.n_head != 0)
    throw UsageError(fmt::format("gpt n_embd {} is not divisible by n_head {}", s.n_embd, s.n_head),
                     "pick n_embd as a multiple of n_head (e.g. 128 with 4 heads)")
        .at("model.n_embd");
  if (s.dropout < 0 || s.dropout >= 1)
    throw UsageError(fmt::format("gpt dropout {} is outside [0, 1)", s.dropout)).at("model.dropout");
  return std::make_shared<Gpt>(s, seed);
}

}  // namespace mtrain::trainer
