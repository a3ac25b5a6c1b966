#pragma once
// model.init: start training from pretrained weights in a file (weights_file.hpp formats).
//
// Names and shapes are compared first (a pure function), on every rank alike, and mismatches
// are reported as one table (missing / unexpected / wrong shape). Strict (model.init_strict,
// the default): any mismatch is an error. Not strict: the matching tensors load, the rest of
// the model keeps its initial values (a new head), and the table is printed as a notice.
// Then each rank reads from the file only what it holds — the strategy's load_parameters
// (its shard under ZeRO/FSDP) and the model's buffers (replicated, small) — so no rank ever
// holds the model twice.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

namespace mtrain::trainer {

class Strategy;

struct NamedShape {
  std::string name;
  std::vector<int64_t> shape;
  bool buffer = false;  // a model buffer (BatchNorm statistics), not a parameter
  // The earlier name of the same tensor when the model ties weights (lm_head.weight is
  // transformer.wte.weight in a GPT-2 with tied embeddings); "" when it is its own.
  std::string tied_to = {};
};

struct InitMatch {
  struct WrongShape {
    std::string name;
    std::vector<int64_t> model, file;
  };
  std::vector<std::string> matched;   // in both, same shape (model order)
  std::vector<NamedShape> missing;     // parameters in the model only
  // Buffers in the model only: not a mismatch, even when strict, since mtrain's own model.pt,
  // model.safetensors and checkpoints hold parameters only; they keep their initial values.
  std::vector<NamedShape> missing_buffers;
  std::vector<NamedShape> unexpected;  // in the file only
  std::vector<WrongShape> wrong_shape;
  // Model name → file name where they differ: a tied tensor read under its twin's name (a Hugging
  // Face file leaves the tied duplicate out; a file may hold the other name of the two).
  std::map<std::string, std::string> file_name;
  std::vector<std::string> tied;  // tied names taken from their twin (for the notice)
  bool exact() const { return missing.empty() && unexpected.empty() && wrong_shape.empty(); }
};

// The model's parameters then buffers, by name, as a state dict lists them, tied names marked
// (tied_to). Take it before the strategy's setup (a sharded strategy may replace parameters by
// flat shards).
std::vector<NamedShape> model_layout(const torch::nn::Module& model);

// A tied name absent from the file is not missing when its twin is there (either of the two).
InitMatch match_init(const std::vector<NamedShape>& model, const std::vector<NamedShape>& file);

// The file's names as the model's when they are the model's without its wrapper's first component
// (a Hugging Face model.safetensors — "transformer.h.0…" — for a module that holds the HF model as
// `model`: "model.transformer.h.0…"): the prefix ("model.") when adding it back matches more
// tensors than the names as they are, else "".
std::string wrapper_prefix_to_add(const std::vector<NamedShape>& model, const std::vector<NamedShape>& file);

// The mismatch table, one row per tensor (at most `max_rows`, then a count of the rest).
std::string format_init_mismatch(const InitMatch& m, size_t max_rows = 40);

struct InitOptions {
  std::string path;
  bool strict = true;
};
struct InitReport {
  std::string format;                // of the file
  size_t loaded = 0, model_tensors = 0;
  std::vector<std::string> notices;  // lines worth printing (partial load table, file notes)
};

class WeightsFile;
// A checked file, ready to load: the open file (headers only) and the tensors to take from it.
struct InitPlan {
  std::shared_ptr<const WeightsFile> file;
  std::vector<std::string> matched;
  std::map<std::string, std::string> file_name;  // model name → the file's, where they differ
  InitReport report;
};

// Opens the file and compares names and shapes with `layout` (model_layout, taken before the
// strategy's setup); reads no tensor data. Throws mtrain::Error (exit 2): the file cannot be
// read, or strict and the names/shapes differ (the table in the message), or nothing matches.
// The trainer runs it before it writes anything into the work dir.
InitPlan check_init_weights(const InitOptions& o, const std::vector<NamedShape>& layout);

// Loads a checked plan (after strategy.setup): the strategy's parameters (each rank its part)
// and the model's buffers.
void load_init_weights(const InitPlan& plan, Strategy& strategy, torch::nn::Module& model);

}  // namespace mtrain::trainer
