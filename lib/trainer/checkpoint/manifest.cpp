#include "lib/trainer/checkpoint/manifest.hpp"

#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/input_limits.hpp"
#include "lib/core/crc32c.hpp"
#include "lib/core/visible_text.hpp"

namespace mtrain::trainer {

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

using nlohmann::json;

json to_json(const Manifest& m) {
  json t = json::object();
  for (const auto& [name, meta] : m.tensors) {
    json pieces = json::array();
    for (const auto& p : meta.pieces) {
      json pj{{"rank", p.rank}, {"file", p.file}, {"offset", p.offset}, {"numel", p.numel}};
      if (!p.key.empty()) pj["key"] = p.key;
      pieces.push_back(pj);
    }
    t[name] = {{"shape", meta.shape}, {"dtype", meta.dtype}, {"pieces", pieces}};
  }
  json files = json::object();
  for (const auto& [name, f] : m.files) {
    json extras = json::object();
    for (const auto& [en, e] : f.extras) {
      extras[en] = {{"key", e.key}, {"dtype", e.dtype}, {"shape", e.shape}};
    }
    files[name] = {{"rank", f.rank}, {"bytes", f.bytes}, {"checksum", f.checksum}, {"extras", extras}};
  }
  json j{{"format_version", m.format_version}, {"strategy", m.strategy},
         {"world_size", m.world_size},         {"step", m.step},
         {"state", m.state},                   {"tensors", t},
         {"files", files},                     {"order", m.order}};
  j["checksum"] = manifest_checksum(j);
  return j;
}

std::string manifest_checksum(json j) {
  // Over the compact dump of everything else: objects are key-sorted, numbers dump the same
  // after a parse, so a reader recomputes it from what it parsed.
  j.erase("checksum");
  const std::string text = j.dump();
  return crc32c_text(crc32c_update(0, text.data(), text.size()));
}

int dtype_name_bytes(const std::string& d) {
  if (d == "float64" || d == "int64") return 8;
  if (d == "float32" || d == "int32") return 4;
  if (d == "float16" || d == "bfloat16") return 2;
  if (d == "uint8") return 1;
  return 0;
}

namespace {

// A shard's file name stays inside the checkpoint folder.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != ".." && name.find('/') == std::string::npos;
}

// Reads a manifest's JSON; every refusal names the manifest (`origin`) and the way out.
class ManifestParser {
 public:
  explicit ManifestParser(const std::string& origin) : origin_(origin) {}

  Manifest parse(const json& j) const {
    Manifest m;
    if (!j.is_object()) throw bad("not a JSON object");
    header(j, m);
    for (const auto& [name, t] : j.at("tensors").items()) m.tensors[name] = tensor(name, t, m.world_size);
    for (const auto& n : j.value("order", json::array())) {
      const std::string name = n.get<std::string>();
      if (m.tensors.count(name)) m.order.push_back(name);
    }
    if (m.order.size() != m.tensors.size()) {  // format 1, or an order that lists too few
      m.order.clear();
      for (const auto& [name, meta] : m.tensors) m.order.push_back(name);
    }
    if (m.format_version >= 2) {
      for (const auto& [name, f] : j.at("files").items()) m.files[name] = file(name, f);
      check_pieces_in_files(m);
    }
    check_pieces_used_once(m);
    return m;
  }

  Error bad(const std::string& what) const {
    return Error(fmt::format("{}: not a valid mtrain checkpoint manifest: {}", origin_, what),
                 "the checkpoint is damaged or from another tool; pass another folder to "
                 "checkpoint.resume or remove this one");
  }

 private:
  // nlohmann casts a floating-point value to an integer type as it is, undefined behaviour when
  // out of range (a shape of 4.5e21: fuzz checkpoint_manifest, UBSan): integers must be integers.
  int64_t whole(const json& v, const char* field) const {
    if (!v.is_number_integer()) throw bad(fmt::format("\"{}\" is {}, not a whole number", field, v.dump()));
    return v.get<int64_t>();
  }
  std::vector<int64_t> whole_list(const json& v, const char* field) const {
    if (!v.is_array()) throw bad(fmt::format("\"{}\" is not a list", field));
    std::vector<int64_t> out;
    for (const auto& x : v) out.push_back(whole(x, field));
    return out;
  }

  // The checksum, the format and the scalar fields.
  void header(const json& j, Manifest& m) const {
    if (j.contains("checksum")) {
      // Shard checksums catch damaged shards; this catches an edited or damaged manifest (a
      // dtype changed float32 → float64 would make every reader decode garbage).
      const std::string recorded = j.at("checksum").get<std::string>();
      const std::string actual = manifest_checksum(j);
      if (recorded != actual) {
        throw bad(fmt::format("its content does not match its checksum (recorded {}, computed {}): "
                              "it was edited or damaged after it was written",
                              recorded, actual));
      }
      m.checksummed = true;
    }
    m.format_version = static_cast<int>(whole(j.at("format_version"), "format_version"));
    if (m.format_version < kOldestReadableFormat || m.format_version > kCheckpointFormatVersion) {
      throw bad(fmt::format("format_version {} (this build reads {} to {})", m.format_version,
                            kOldestReadableFormat, kCheckpointFormatVersion));
    }
    if (m.format_version >= kChecksummedFormat && !m.checksummed) {
      throw bad(fmt::format("format_version {} requires a \"checksum\" and it has none: the manifest "
                            "was edited (its checksum removed) or damaged", m.format_version));
    }
    m.strategy = j.at("strategy").get<std::string>();
    m.world_size = static_cast<int>(whole(j.at("world_size"), "world_size"));
    if (m.world_size < 1 || m.world_size > (1 << 20)) throw bad(fmt::format("world_size {}", m.world_size));
    m.step = whole(j.at("step"), "step");
    m.state = j.value("state", json::object());
  }

  // A logical tensor: its shape and dtype, and pieces that lie inside it, from ranks of the world.
  TensorMeta tensor(const std::string& name, const json& t, int world_size) const {
    TensorMeta meta;
    meta.shape = whole_list(t.at("shape"), "shape");
    meta.dtype = t.at("dtype").get<std::string>();
    if (dtype_name_bytes(meta.dtype) == 0) throw bad(fmt::format("tensor '{}' has an unknown dtype '{}'", name, meta.dtype));
    if (meta.shape.size() > 64) throw bad(fmt::format("tensor '{}' has more than 64 dimensions", name));
    // The element count without overflow: every piece must lie inside it.
    int64_t numel = 1;
    for (int64_t d : meta.shape) {
      if (d < 0) throw bad(fmt::format("tensor '{}' has a negative dimension", name));
      if (__builtin_mul_overflow(numel, d, &numel) || numel > (int64_t{1} << 50)) {
        throw bad(fmt::format("tensor '{}' has an impossible shape (more than 2^50 elements)", name));
      }
    }
    for (const auto& p : t.at("pieces")) {
      meta.pieces.push_back({static_cast<int>(whole(p.at("rank"), "rank")), p.at("file").get<std::string>(),
                             whole(p.at("offset"), "offset"), whole(p.at("numel"), "numel"),
                             p.value("key", std::string())});
      const auto& r = meta.pieces.back();
      if (r.offset < 0 || r.numel < 0 || r.offset > numel || r.numel > numel - r.offset ||
          r.rank < 0 || r.rank >= world_size || !is_plain_file_name(r.file)) {
        throw bad(fmt::format("tensor '{}' of {} elements has a bad piece (rank {}, file '{}', "
                              "offset {}, numel {})", name, numel, r.rank, r.file, r.offset, r.numel));
      }
    }
    return meta;
  }

  // A row of the files table (format 2).
  FileMeta file(const std::string& name, const json& f) const {
    if (!is_plain_file_name(name)) throw bad(fmt::format("shard file name '{}'", name));
    FileMeta fm;
    fm.rank = static_cast<int>(whole(f.at("rank"), "rank"));
    fm.bytes = static_cast<uint64_t>(whole(f.at("bytes"), "bytes"));
    fm.checksum = f.at("checksum").get<std::string>();
    const json extras = f.value("extras", json::object());  // items() must not outlive it
    for (const auto& [en, e] : extras.items()) {
      fm.extras[en] = {e.at("key").get<std::string>(), e.at("dtype").get<std::string>(),
                       whole_list(e.at("shape"), "shape")};
    }
    return fm;
  }

  // Format 2: every piece is a keyed record of a file in the files table.
  void check_pieces_in_files(const Manifest& m) const {
    for (const auto& [name, meta] : m.tensors) {
      for (const auto& p : meta.pieces) {
        if (!m.files.count(p.file) || p.key.empty()) {
          throw bad(fmt::format("tensor '{}' has a piece in '{}', which the files table lacks",
                                name, p.file));
        }
      }
    }
  }

  // Each record of a shard is one piece of one tensor, as the checkpointer writes them: a manifest
  // that names a record again (20,000 tensors naming one piece, one tensor listing it 10,000
  // times) made `verify` say ok and consolidate write a 375 KB shard out as a 657 MB file (issue 40
  // item 9). A record is its file and key; a piece without a key (format 1) is its tensor's entry
  // in the file; a file's extra state is keyed like a piece.
  void check_pieces_used_once(const Manifest& m) const {
    std::unordered_map<std::string, std::string> owner;  // "<file>\0<record>" -> who names it
    owner.reserve(m.tensors.size());
    auto claim = [&](const std::string& file, const std::string& record, const std::string& who) {
      const auto [it, fresh] = owner.emplace(file + '\0' + record, who);
      if (fresh) return;
      const std::string again = it->second == who ? "lists it more than once"
                                                  : fmt::format("and so does {}", visible_text(it->second));
      throw bad(fmt::format("{} names record '{}' of {}, {}: each record of a shard holds one piece of one "
                            "tensor, and a record named again would be read (and written by consolidate) again",
                            visible_text(who), visible_text(record), visible_text(file), again));
    };
    for (const auto& [name, meta] : m.tensors)
      for (const auto& p : meta.pieces) claim(p.file, p.key.empty() ? name : p.key, "tensor '" + name + "'");
    for (const auto& [file, f] : m.files)
      for (const auto& [extra, e] : f.extras) claim(file, e.key, "the extra state '" + extra + "'");
  }

  const std::string& origin_;
};

}  // namespace

Manifest manifest_from_json(const json& j, const std::string& origin) {
  const ManifestParser parser(origin);
  try {
    return parser.parse(j);
  } catch (const json::exception& e) {
    throw parser.bad(e.what());
  }
}

Manifest read_manifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  // Bounded like every structured file we read; a manifest lists a few entries per tensor.
  InputLimits lim;
  lim.max_bytes = 256u << 20;
  lim.max_nodes = 16u << 20;
  std::optional<std::string> text;
  try {
    text = read_input_file(path, lim);
  } catch (Error& e) {
    throw UsageError(e.message(), "the checkpoint is damaged; resume from an older one or start afresh");
  }
  if (!text) {
    throw UsageError(fmt::format("{}: cannot read the checkpoint manifest", path),
                     "a checkpoint folder holds manifest.json, shard_rank<r>.pt and COMPLETE; pass "
                     "such a folder (or 'auto') to checkpoint.resume");
  }
  json j;
  try {
    j = parse_json_limited(*text, path, false, lim);
  } catch (const Error& e) {
    throw UsageError(e.message(), "the checkpoint is damaged; resume from an older one or start afresh");
  } catch (const json::exception& e) {
    throw UsageError(fmt::format("{}: the checkpoint manifest is not valid JSON ({})", path, e.what()),
                     "the checkpoint is damaged; resume from an older one or start afresh");
  }
  return manifest_from_json(j, path);
}

}  // namespace mtrain::trainer
