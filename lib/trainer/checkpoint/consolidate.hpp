#pragma once
// Offline tools over a checkpoint folder (what `mtrain checkpoint …` runs, through
// `mtrain-worker checkpoint …`): consolidate the model's weights into one torch.load-able state
// dict, describe a checkpoint, verify it.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/config/weight_format.hpp"

namespace mtrain::trainer {

struct ConsolidateOptions {
  std::string dir;          // a checkpoint folder (step_<N>)
  std::string output;       // model.pt (a folder for hf)
  // pt (torch.load-able zip) | safetensors | hf (a folder from_pretrained reads: hf_weights.hpp);
  // nullopt = from the output's extension (.safetensors).
  std::optional<config::WeightFormat> format;
  std::string hf_config;                 // hf: the model's config.json, copied beside the weights
  std::optional<std::string> hf_prefix;  // hf: the wrapper's prefix to strip (nullopt: the default)
  std::string dtype = "fp32";  // fp32 | bf16 | fp16 (floating tensors only)
  bool verify = true;       // check sizes and checksums first
};
struct ConsolidateResult {
  int64_t tensors = 0;
  int64_t elements = 0;
  uint64_t bytes = 0;            // of the output file
  int64_t largest_tensor_bytes = 0;  // the most this held in memory at once (one tensor)
  std::string hf_prefix;             // hf: the prefix stripped from every name
};
// Streams the "model/…" tensors one at a time: each is read range by range from the shards that
// hold it (CheckpointReader), cast, written as its record and dropped, so memory holds one
// tensor, never a whole shard or model. Names are the model's parameter names, in the order the
// strategy listed them. Throws mtrain::Error (damaged checkpoint, unwritable output).
ConsolidateResult consolidate_checkpoint(const ConsolidateOptions& o);
// The format consolidate writes: o.format, else safetensors for a .safetensors output, else pt.
// Throws mtrain::Error (exit 2) for hf without hf_config (and the reverse).
config::WeightFormat consolidate_format(const ConsolidateOptions& o);

// Throws mtrain::Error (exit 2) unless `dir` is a folder with a manifest.json.
void require_checkpoint_dir(const std::string& dir);

// strategy, world size, step, format, verification status, tensors with shapes/dtypes/bytes.
nlohmann::json inspect_checkpoint(const std::string& dir, bool verify_checksums = true);
std::string format_inspection(const nlohmann::json& report);

}  // namespace mtrain::trainer
