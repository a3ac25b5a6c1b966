#pragma once
// The task models of the bundled trainer and the one interface the loop and the strategies see.
// A TaskModel owns its loss: the loop never needs to know whether it trains a classifier or a
// language model, only which figures to report (accuracy vs perplexity and tokens/s).
//
// Conventions every model keeps:
//  * Parameters are created in a fixed order, so named_parameters() (and with it the flat layout
//    the sharded strategies build) is identical on every rank and in every run.
//  * make_model(spec, seed) initialises every parameter from a private generator seeded by
//    `seed`; the global torch RNG is neither read nor advanced, so the loop's dropout seeding is
//    unaffected and the same seed gives bit-identical weights.
//  * Weights are created on the CPU in fp32; the loop moves/casts the module afterwards.
//  * Repeated blocks are submodules whose dotted names block_prefixes() lists ("blocks.3",
//    "layer2.1"), the units FSDP wraps and activation checkpointing recomputes.
#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include "lib/config/names.hpp"
#include "lib/config/sharding_choices.hpp"
#include "lib/config/train_choices.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mtrain::trainer {

// One micro-batch. Classifiers: input float [B, …], target int64 [B]. Language models: input
// and target int64 [B, T] (target = input shifted by one token).
struct Batch {
  at::Tensor input;
  at::Tensor target;
  int64_t size() const { return input.size(0); }
};

// Summed over a batch, so the loop can add batches and ranks before dividing.
// count = samples for classifiers, tokens for language models; correct = argmax hits (tokens
// predicted exactly, for language models).
struct EvalStats {
  double loss_sum = 0;
  int64_t count = 0;
  int64_t correct = 0;
};

// Mirrors the job's "model" section (defaults = the settings registry's); TrainJob fills it.
struct ModelSpec {
  config::ModelName name = config::ModelName::Gpt;
  int64_t n_layer = 4;       // gpt
  int64_t n_head = 4;        // gpt
  int64_t n_embd = 128;      // gpt
  int64_t block_size = 64;   // gpt: context length
  int64_t vocab_size = 256;  // gpt
  double dropout = 0.0;      // gpt
  int64_t hidden = 256;      // mlp
  int64_t depth = 3;         // mlp: linear layers
  int64_t input_dim = 32;    // mlp
  int64_t num_classes = 10;  // mlp, resnet
  // torchscript: the torch.jit.save file; compiled: the package folder (python/mtrain_export)
  std::string path;
  // torchscript: the eval-mode trace of the module in `path`, which validation runs (trace_pair.hpp)
  std::string eval_path;
  config::LossName loss = config::LossName::Auto;  // torchscript
  std::string wrap_module_types;  // torchscript: block classes / dotted names, comma-separated
  // torchscript without wrap_module_types: with wrap_policy size, activation checkpointing
  // recomputes the subtrees of at least min_num_params parameters (FSDP's size units).
  config::WrapPolicy wrap_policy = config::WrapPolicy::Layer;
  int64_t min_num_params = 100000000;
  // fsdp.activation_checkpointing, honoured by every strategy. A torchscript model prepares its
  // blocks from it when built; every model follows set_activation_checkpointing, which the
  // worker calls with this value (the one place it is held).
  bool activation_checkpointing = false;
  // model.trust_code: run a TorchScript file core/torchscript_trust refuses; load a compiled package
  bool trust_code = false;
  bool language_model = false;    // torchscript: lm_cross_entropy loss or tokens data
};

class TaskModel : public torch::nn::Module {
 public:
  // The model's raw output for a batch input: logits [B, classes], or [B, T, vocab] for
  // language models. Uses the module's current train/eval mode and autograd state.
  virtual at::Tensor forward(const at::Tensor& input) = 0;
  // Mean loss over the batch (over every token for language models).
  virtual at::Tensor loss(const Batch& b) = 0;
  // Summed loss and hits, without autograd and in eval mode (dropout off, BatchNorm uses its
  // running statistics); the module's train/eval mode is restored afterwards.
  virtual EvalStats evaluate(const Batch& b) = 0;
  virtual bool is_language_model() const = 0;
  // block_size for language models, else 1.
  virtual int64_t tokens_per_sample() const = 0;
  // Dotted names of the repeated blocks, in parameter order.
  virtual std::vector<std::string> block_prefixes() const = 0;

  // Activation checkpointing (recompute.hpp): while training with autograd on, each block's
  // activations are recomputed in backward instead of kept. Models without blocks ignore it.
  void set_activation_checkpointing(bool on) { recompute_blocks_ = on; }
  bool activation_checkpointing() const { return recompute_blocks_; }

 protected:
  // Whether this forward should run its blocks checkpointed.
  bool recompute_now() const;

 private:
  bool recompute_blocks_ = false;
};

// Throws mtrain::Error for an inconsistent spec (e.g. n_embd % n_head != 0). torchscript models
// take their weights from model.path and ignore `seed`.
std::shared_ptr<TaskModel> make_model(const ModelSpec& spec, uint64_t seed);

}  // namespace mtrain::trainer
