#include "lib/trainer/checkpoint/hf_weights.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/untrusted_file.hpp"
#include "lib/trainer/checkpoint/durable_file.hpp"
#include "lib/trainer/checkpoint/safetensors.hpp"

namespace mtrain::trainer {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxConfigBytes = 16ull << 20;  // a config.json is a few KB

const char* const kConfigHint =
    "pass the config.json of the Hugging Face model you wrapped (model.config.save_pretrained(DIR) "
    "writes it), e.g. --hf-config DIR/config.json";

}  // namespace

HfConfig read_hf_config(const std::string& path) {
  std::string why;
  UntrustedFile f = open_untrusted(path, &why);
  if (f.fd() < 0) throw UsageError(fmt::format("--hf-config '{}' {}", path, why), kConfigHint);
  if (f.size() > kMaxConfigBytes) {
    throw UsageError(fmt::format("--hf-config '{}' is {} bytes; a config.json is a few KB (at most {} read)", path,
                                 f.size(), kMaxConfigBytes),
                     kConfigHint);
  }
  HfConfig c;
  c.path = path;
  c.text.resize(f.size());
  if (!f.pread_exact(c.text.data(), c.text.size(), 0)) {
    throw UsageError(fmt::format("--hf-config '{}' could not be read whole", path), kConfigHint);
  }
  c.json = nlohmann::json::parse(c.text, nullptr, /*allow_exceptions=*/false);
  if (c.json.is_discarded() || !c.json.is_object()) {
    throw UsageError(fmt::format("--hf-config '{}' is not a JSON object", path), kConfigHint);
  }
  if (!c.json.contains("model_type") && !c.json.contains("architectures")) {
    throw UsageError(fmt::format("--hf-config '{}' has neither model_type nor architectures: not a Hugging "
                                 "Face model config, which from_pretrained needs to build the model",
                                 path),
                     kConfigHint);
  }
  return c;
}

HfNames hf_names(const std::vector<std::string>& names, const std::vector<std::string>& tied_to,
                 const std::optional<std::string>& prefix, const HfConfig& config) {
  HfNames h;
  if (prefix) {
    h.prefix = *prefix;
    if (!h.prefix.empty() && h.prefix.back() != '.') h.prefix += '.';
    std::vector<std::string> without;
    for (const auto& n : names)
      if (n.rfind(h.prefix, 0) != 0) without.push_back(n);
    if (!h.prefix.empty() && !without.empty()) {
      throw UsageError(
          fmt::format("--hf-prefix '{}': {} of the model's {} tensors do not start with it ({}{})", h.prefix,
                      without.size(), names.size(),
                      fmt::join(without.begin(), without.begin() + std::min<size_t>(without.size(), 5), ", "),
                      without.size() > 5 ? ", …" : ""),
          "name the attribute the wrapper holds the Hugging Face model in (e.g. --hf-prefix "
          "model), or --hf-prefix '' to keep the names; tensors of the wrapper's own do not "
          "belong in a Hugging Face checkpoint");
    }
  } else if (!names.empty()) {
    const auto dot = names.front().find('.');
    const std::string first = dot == std::string::npos ? "" : names.front().substr(0, dot + 1);
    bool common = !first.empty();
    for (const auto& n : names) common = common && n.rfind(first, 0) == 0;
    if (common) h.prefix = first;
  }
  // save_pretrained leaves a tied duplicate out unless the config unties the embeddings.
  const bool untied = config.json.value("tie_word_embeddings", true) == false;
  std::set<std::string> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!untied && i < tied_to.size() && !tied_to[i].empty()) {
      h.names.emplace_back();
      h.left_out.push_back(names[i]);
      continue;
    }
    std::string n = names[i].substr(h.prefix.size());
    if (!seen.insert(n).second) {
      throw UsageError(fmt::format("two tensors are named '{}' once '{}' is stripped", n, h.prefix),
                       "pick the prefix to strip with --hf-prefix");
    }
    h.names.push_back(std::move(n));
  }
  return h;
}

void make_hf_folder(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw UsageError(fmt::format("{}: the Hugging Face output is a folder, and that path is not one", dir),
                     "name a new or existing folder, e.g. -o hf_model");
  }
  fs::create_directories(dir, ec);
  if (ec) throw RuntimeFailure(fmt::format("{}: cannot create the folder: {}", dir, ec.message()), "");
}

uint64_t write_hf_weights(DurableWriter& out, const std::vector<ArchiveEntry>& entries, const HfNames& hf,
                          const std::map<std::string, std::string>& metadata) {
  auto next = std::make_shared<size_t>(0);  // the next entry to produce
  std::vector<ArchiveEntry> kept;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (hf.names[i].empty()) continue;
    ArchiveEntry e = entries[i];
    e.name = hf.names[i];
    e.data = [&entries, next, i] {
      for (; *next < i; ++*next) entries[*next].data();  // the left-out ones before it
      ++*next;
      return entries[i].data();
    };
    kept.push_back(std::move(e));
  }
  const uint64_t bytes = write_safetensors(out, kept, metadata);
  for (; *next < entries.size(); ++*next) entries[*next].data();
  return bytes;
}

void write_hf_config(const std::string& dir, const HfConfig& config) {
  DurableWriter cfg((fs::path(dir) / "config.json").string());
  cfg.write(config.text.data(), config.text.size());
  cfg.commit();
}

}  // namespace mtrain::trainer
