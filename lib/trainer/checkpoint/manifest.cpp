#include "mtrain/trainer/checkpoint/manifest.hpp"

#include <fstream>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"

namespace mtrain::trainer {

using nlohmann::json;

json to_json(const Manifest& m) {
  json t = json::object();
  for (const auto& [name, meta] : m.tensors) {
    json pieces = json::array();
    for (const auto& p : meta.pieces) {
      pieces.push_back({{"rank", p.rank}, {"file", p.file}, {"offset", p.offset}, {"numel", p.numel}});
    }
    t[name] = {{"shape", meta.shape}, {"dtype", meta.dtype}, {"pieces", pieces}};
  }
  return {{"format_version", m.format_version}, {"strategy", m.strategy},
          {"world_size", m.world_size},         {"step", m.step},
          {"state", m.state},                   {"tensors", t}};
}

Manifest manifest_from_json(const json& j, const std::string& origin) {
  auto bad = [&](const std::string& what) {
    return Error(fmt::format("{}: not a valid mtrain checkpoint manifest: {}", origin, what),
                 "the checkpoint is damaged or from another tool; pass another folder to "
                 "checkpoint.resume or remove this one");
  };
  try {
    Manifest m;
    m.format_version = j.at("format_version").get<int>();
    if (m.format_version != kCheckpointFormatVersion) {
      throw bad(fmt::format("format_version {} (this build reads {})", m.format_version,
                            kCheckpointFormatVersion));
    }
    m.strategy = j.at("strategy").get<std::string>();
    m.world_size = j.at("world_size").get<int>();
    m.step = j.at("step").get<int64_t>();
    m.state = j.value("state", json::object());
    for (const auto& [name, t] : j.at("tensors").items()) {
      TensorMeta meta;
      meta.shape = t.at("shape").get<std::vector<int64_t>>();
      meta.dtype = t.at("dtype").get<std::string>();
      for (const auto& p : t.at("pieces")) {
        meta.pieces.push_back({p.at("rank").get<int>(), p.at("file").get<std::string>(),
                               p.at("offset").get<int64_t>(), p.at("numel").get<int64_t>()});
      }
      m.tensors[name] = std::move(meta);
    }
    return m;
  } catch (const json::exception& e) {
    throw bad(e.what());
  }
}

Manifest read_manifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  std::ifstream in(path);
  if (!in) {
    throw Error(fmt::format("{}: cannot read the checkpoint manifest", path),
                "a checkpoint folder holds manifest.json, shard_rank<r>.pt and COMPLETE; pass "
                "such a folder (or 'auto') to checkpoint.resume");
  }
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: the checkpoint manifest is not valid JSON ({})", path, e.what()),
                "the checkpoint is damaged; resume from an older one or start afresh");
  }
  return manifest_from_json(j, path);
}

}  // namespace mtrain::trainer
