#include "lib/trainer/checkpoint/consolidate.hpp"

#include "lib/trainer/checkpoint/manifest.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "lib/config/weight_dtype.hpp"
#include "lib/core/error.hpp"
#include "lib/core/untrusted_file.hpp"
#include "lib/trainer/checkpoint/checkpointer.hpp"
#include "lib/trainer/checkpoint/durable_file.hpp"
#include "lib/trainer/checkpoint/hf_weights.hpp"
#include "lib/trainer/checkpoint/safetensors.hpp"
#include "lib/trainer/checkpoint/part_file_signals.hpp"
#include "lib/trainer/checkpoint/shard_io.hpp"
#include "lib/trainer/checkpoint/tensor_archive.hpp"
#include "lib/trainer/checkpoint/verify.hpp"

namespace mtrain::trainer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

at::ScalarType output_dtype(const std::string& name) {
  const auto d = config::parse_choice<config::WeightDtype>(name);
  if (!d)
    throw UsageError(fmt::format("--dtype '{}' is not one of fp32, bf16, fp16", name),
                     "pick the dtype of the consolidated weights, e.g. --dtype bf16");
  switch (*d) {
    case config::WeightDtype::Fp32: return at::kFloat;
    case config::WeightDtype::Bf16: return at::kBFloat16;
    case config::WeightDtype::Fp16: return at::kHalf;
  }
  config::no_such_value(*d);
}

// Where consolidate may write: a new file, or an existing regular file that is not part of the
// checkpoint it reads. The output is written to <out>.part (created O_EXCL|O_NOFOLLOW by
// DurableWriter) and renamed over <out>; a rename replaces whatever the name held, so a device
// (-o /dev/null as root), a FIFO or a symbolic link there would be replaced by a regular file,
// and -o <checkpoint>/shard_rank0.pt destroyed the checkpoint being read. Each is refused first.
void check_output_path(const fs::path& out, const std::string& dir) {
  const std::string hint = "write the consolidated weights to a new file outside the checkpoint "
                           "folder, e.g. -o model.pt";
  std::error_code ec;
  const fs::path ck = fs::canonical(dir, ec);
  const fs::path parent = fs::weakly_canonical(out.parent_path(), ec);
  const fs::path resolved = parent / out.filename();
  if (!ck.empty()) {
    auto inside = [&](const fs::path& p) {
      auto [a, b] = std::mismatch(ck.begin(), ck.end(), p.begin(), p.end());
      return a == ck.end();
    };
    if (inside(resolved) || inside(fs::weakly_canonical(out, ec))) {
      throw UsageError(fmt::format("-o {}: the output lies inside the checkpoint folder {} that consolidate "
                                   "reads; writing it would damage the checkpoint",
                                   out.string(), ck.string()),
                       hint);
    }
  }
  struct stat st {};
  if (::lstat(out.c_str(), &st) != 0) return;  // a new file
  if (!S_ISREG(st.st_mode)) {
    std::string what = file_type_name(st.st_mode);
    if (S_ISLNK(st.st_mode)) what += " to " + fs::read_symlink(out, ec).string();
    throw UsageError(fmt::format("-o {}: the path is {}; consolidate writes only a regular file and does "
                                 "not replace anything else",
                                 out.string(), what),
                     hint);
  }
  // The same file as one of the checkpoint's (a hard link): replacing it would lose the shard.
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    struct stat s2 {};
    if (::lstat(e.path().c_str(), &s2) == 0 && s2.st_dev == st.st_dev && s2.st_ino == st.st_ino) {
      throw UsageError(
          fmt::format("-o {}: the path is the checkpoint's own file {} (a hard link)", out.string(), e.path().string()),
          hint);
    }
  }
}

}  // namespace

void require_checkpoint_dir(const std::string& dir) {
  if (!fs::is_directory(dir)) {
    throw UsageError(fmt::format("'{}' is not a folder", dir),
                     "pass a checkpoint folder such as work_dirs/run/checkpoints/step_100");
  }
  if (!fs::exists(fs::path(dir) / "manifest.json")) {
    throw UsageError(fmt::format("{}: no manifest.json, so this is not an mtrain checkpoint folder", dir),
                     "pass a step_<N> folder from <work_dir>/checkpoints");
  }
}

config::WeightFormat consolidate_format(const ConsolidateOptions& o) {
  using F = config::WeightFormat;
  const F f = o.format ? *o.format : fs::path(o.output).extension() == ".safetensors" ? F::Safetensors : F::Pt;
  if ((f == F::Hf) != !o.hf_config.empty() || (o.hf_prefix && f != F::Hf)) {
    throw UsageError(f == F::Hf ? std::string("--format hf needs --hf-config config.json (the Hugging Face model's "
                                              "config, copied beside the weights)")
                                : std::string("--hf-config and --hf-prefix go with --format hf"),
                     "e.g. mtrain checkpoint consolidate CKPT -o hf_model --format hf --hf-config config.json");
  }
  return f;
}

ConsolidateResult consolidate_checkpoint(const ConsolidateOptions& o) {
  require_checkpoint_dir(o.dir);
  check_output_path(fs::absolute(o.output), o.dir);  // before the (long) verification
  const at::ScalarType want = output_dtype(o.dtype);
  const config::WeightFormat format = consolidate_format(o);
  std::optional<HfConfig> hf_config;
  if (format == config::WeightFormat::Hf) {
    hf_config = read_hf_config(o.hf_config);
    for (const char* f : {"model.safetensors", "config.json"}) check_output_path(fs::absolute(o.output) / f, o.dir);
  }
  if (o.verify) {
    const VerifyReport rep = verify_checkpoint(o.dir);
    if (!rep.ok()) {
      throw RuntimeFailure(rep.problem(),
                           "consolidate another checkpoint, or run `mtrain checkpoint verify` "
                           "for every problem");
    }
  }
  CheckpointReader reader(o.dir);
  const Manifest& m = reader.manifest();
  ConsolidateResult res;
  std::vector<ArchiveEntry> entries;
  for (const auto& name : m.order) {
    if (name.rfind(kModelPrefix, 0) != 0) continue;
    const TensorMeta& meta = m.tensors.at(name);
    const at::ScalarType stored = dtype_from_name(meta.dtype);
    const at::ScalarType dt = at::isFloatingType(stored) ? want : stored;
    const std::vector<int64_t> shape = meta.shape;
    const int64_t n = numel_of(shape);
    res.tensors += 1;
    res.elements += n;
    res.largest_tensor_bytes =
        std::max<int64_t>(res.largest_tensor_bytes, n * static_cast<int64_t>(c10::elementSize(stored)));
    entries.push_back({name.substr(kModelPrefix.size()), dt, shape, [&reader, name, n, dt] {
                         at::Tensor t = reader.read(name, 0, n).to(dt);
                         reader.release();
                         return t;
                       }});
  }
  if (entries.empty()) {
    throw RuntimeFailure(fmt::format("{}/manifest.json lists no model/ tensors", o.dir),
                         "the folder is not a checkpoint of a model");
  }
  const std::map<std::string, std::string> meta = {
      {"format", "pt"}, {"producer", "mtrain"}, {"step", std::to_string(m.step)}, {"strategy", m.strategy}};
  if (format == config::WeightFormat::Hf) {
    std::vector<std::string> names;
    for (const auto& e : entries) names.push_back(e.name);
    // A checkpoint holds a tied tensor once (under its first name): nothing to leave out.
    const HfNames hf = hf_names(names, {}, o.hf_prefix, *hf_config);
    for (const char* f : {"model.safetensors", "config.json"}) check_output_path(fs::absolute(o.output) / f, o.dir);
    const std::string dir = fs::absolute(o.output).string();
    make_hf_folder(dir);
    RemovePartOnSignal cleanup;
    DurableWriter w((fs::path(dir) / "model.safetensors").string());
    cleanup.arm(w.part());
    res.bytes = write_hf_weights(w, entries, hf, meta);
    w.commit();
    write_hf_config(dir, *hf_config);
    res.hf_prefix = hf.prefix;
    return res;
  }
  const fs::path out = fs::absolute(o.output);
  check_output_path(out, o.dir);
  if (!out.parent_path().empty()) fs::create_directories(out.parent_path());
  RemovePartOnSignal cleanup;  // Ctrl-C, SIGTERM, …: no <dest>.part left
  DurableWriter w(out.string());
  cleanup.arm(w.part());
  if (format == config::WeightFormat::Safetensors) {
    res.bytes = write_safetensors(w, entries, meta);
  } else {
    res.bytes = write_tensor_archive(w, entries).bytes;
  }
  w.commit();
  return res;
}

json inspect_checkpoint(const std::string& dir, bool verify_checksums) {
  require_checkpoint_dir(dir);
  VerifyOptions vo;
  vo.require_complete = false;
  vo.checksums = verify_checksums;
  const VerifyReport rep = verify_checkpoint(dir, vo);
  json j{{"dir", dir}, {"complete", rep.complete}};
  json ver{{"ok", rep.ok()}, {"checksums", rep.checksummed && verify_checksums},
           {"problem", rep.ok() ? json(nullptr) : json(rep.problem())}};
  json files = json::array();
  for (const auto& f : rep.files) {
    files.push_back({{"file", f.file}, {"ok", f.ok}, {"bytes", f.actual_bytes},
                     {"expected_bytes", f.expected_bytes}, {"checksum", f.expected_checksum},
                     {"problem", f.ok ? json(nullptr) : json(f.problem)}});
  }
  ver["files"] = files;
  j["verification"] = ver;
  if (!rep.manifest_ok) return j;
  const Manifest m = read_manifest(dir);
  j["format_version"] = m.format_version;
  j["strategy"] = m.strategy;
  j["world_size"] = m.world_size;
  j["step"] = m.step;
  json tensors = json::array();
  int64_t model_elements = 0, total_bytes = 0;
  for (const auto& name : m.order) {
    const auto& meta = m.tensors.at(name);
    const int64_t n = numel_of(meta.shape);
    const int64_t bytes = n * static_cast<int64_t>(c10::elementSize(dtype_from_name(meta.dtype)));
    if (name.rfind(kModelPrefix, 0) == 0) model_elements += n;
    total_bytes += bytes;
    tensors.push_back({{"name", name}, {"shape", meta.shape}, {"dtype", meta.dtype},
                       {"numel", n}, {"bytes", bytes}, {"pieces", meta.pieces.size()}});
  }
  j["tensors"] = tensors;
  j["num_params"] = model_elements;
  j["state_bytes"] = total_bytes;
  uint64_t file_bytes = 0;
  for (const auto& f : rep.files) file_bytes += f.actual_bytes;
  j["file_bytes"] = file_bytes;
  return j;
}

std::string format_inspection(const json& r) {
  std::string out = fmt::format("checkpoint {}\n", r.at("dir").get<std::string>());
  if (r.contains("strategy")) {
    out += fmt::format("  strategy {}, world size {}, step {}, format {}\n",
                       r["strategy"].get<std::string>(), r["world_size"].get<int>(),
                       r["step"].get<int64_t>(), r["format_version"].get<int>());
    out += fmt::format("  {} parameters; {} tensors ({} bytes of state) in {} bytes of files\n",
                       r["num_params"].get<int64_t>(), r["tensors"].size(),
                       r["state_bytes"].get<int64_t>(), r["file_bytes"].get<uint64_t>());
  }
  const json& v = r.at("verification");
  out += fmt::format("  complete: {}; verification: {}{}\n", r["complete"].get<bool>() ? "yes" : "NO",
                     v["ok"].get<bool>() ? "ok" : "FAILED",
                     v["checksums"].get<bool>() ? " (sizes and CRC-32C)" : " (no checksums)");
  if (!v["ok"].get<bool>()) out += "  problem: " + v["problem"].get<std::string>() + "\n";
  if (r.contains("tensors")) {
    out += fmt::format("  {:<48} {:<20} {:<9} {:>12} {:>6}\n", "tensor", "shape", "dtype", "bytes", "pieces");
    for (const auto& t : r["tensors"]) {
      std::string shape = "[";
      for (const auto& d : t["shape"]) shape += (shape.size() > 1 ? ", " : "") + std::to_string(d.get<int64_t>());
      shape += "]";
      out += fmt::format("  {:<48} {:<20} {:<9} {:>12} {:>6}\n", t["name"].get<std::string>(), shape,
                         t["dtype"].get<std::string>(), t["bytes"].get<int64_t>(),
                         t["pieces"].get<size_t>());
    }
  }
  return out;
}

}  // namespace mtrain::trainer
