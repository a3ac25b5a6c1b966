#pragma once
// A model's weights as Hugging Face's from_pretrained reads them (issue 44 item 4): a folder with
// model.safetensors under the model's own key names and the user's config.json beside it.
//
// mtrain trains the module the user traced or scripted, which wraps the Hugging Face model to
// return logits, so its names carry the wrapper's attribute ("model.transformer.h.0.attn…");
// transformers wants the model's ("transformer.h.0.attn…"). The prefix to strip is the user's
// (--hf-prefix) or, by default, the first name component when every name has the same one (a
// wrapper holds the model as one attribute). A tied tensor is saved once, under its first name,
// as save_pretrained does (lm_head.weight is left out when it is transformer.wte.weight), unless
// config.json says tie_word_embeddings: false.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/trainer/checkpoint/tensor_archive.hpp"

namespace mtrain::trainer {

class DurableWriter;

// config.json read and checked (a JSON object of at most 16 MiB, with model_type or
// architectures): its text, kept as it is. Throws mtrain::Error (exit 2) naming the file.
struct HfConfig {
  std::string path, text;
  nlohmann::json json;
};
HfConfig read_hf_config(const std::string& path);

struct HfNames {
  std::string prefix;               // stripped from every name
  std::vector<std::string> names;   // per input name: its HF name, "" when left out (tied)
  std::vector<std::string> left_out;
};
// names: the model's tensor names in order; tied_to: per name, the earlier name of the same
// tensor ("" when none; may be empty when nothing is tied); prefix: the user's, or nullopt for the
// default. Throws mtrain::Error (exit 2) when a name lacks the user's prefix or two names collide.
HfNames hf_names(const std::vector<std::string>& names, const std::vector<std::string>& tied_to,
                 const std::optional<std::string>& prefix, const HfConfig& config);

// model.safetensors of the entries under hf.names through `out` (the caller commits): left-out
// entries are skipped but still produced, in order, so a streaming producer (the end-of-training
// export's relay) hands out every tensor exactly once. Returns the bytes written.
uint64_t write_hf_weights(DurableWriter& out, const std::vector<ArchiveEntry>& entries, const HfNames& hf,
                          const std::map<std::string, std::string>& metadata);
// Creates `dir` if needed (refused when the path is something else than a folder).
void make_hf_folder(const std::string& dir);
// dir/config.json: the config's text as it was read, durably.
void write_hf_config(const std::string& dir, const HfConfig& config);

// The options of an HF output (consolidate --format hf, model.hf_config at the end of training).
struct HfExport {
  HfConfig config;
  std::optional<std::string> prefix;  // nullopt: the default rule
};

}  // namespace mtrain::trainer
