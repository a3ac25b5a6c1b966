#include "lib/trainer/checkpoint/checkpoint_cli.hpp"

#include <optional>

#include <fmt/format.h>

#include "lib/config/output_format.hpp"
#include "lib/core/error.hpp"
#include "lib/trainer/checkpoint/consolidate.hpp"
#include "lib/trainer/checkpoint/verify.hpp"

namespace mtrain::trainer {

namespace {

const char* kUsage =
    "usage: mtrain-worker checkpoint consolidate DIR -o FILE [--dtype fp32|bf16|fp16]\n"
    "                     [--format pt|safetensors|hf] [--hf-config config.json] [--hf-prefix P]\n"
    "       mtrain-worker checkpoint inspect DIR [--format text|json]\n"
    "       mtrain-worker checkpoint verify DIR\n";

struct Args {
  std::string verb, dir, output, dtype = "fp32";
  config::OutputFormat format = config::OutputFormat::Text;
  std::optional<config::WeightFormat> weights_format;  // consolidate --format (nullopt: from -o's extension)
  std::string hf_config;
  std::optional<std::string> hf_prefix;
};

Args parse(const std::vector<std::string>& a) {
  Args r;
  if (a.empty()) throw UsageError("checkpoint: missing the action (consolidate, inspect or verify)", kUsage);
  r.verb = a[0];
  if (r.verb != "consolidate" && r.verb != "inspect" && r.verb != "verify") {
    throw UsageError(fmt::format("checkpoint: unknown action '{}'", r.verb), kUsage);
  }
  for (size_t i = 1; i < a.size(); ++i) {
    auto value = [&](const std::string& flag) {
      if (i + 1 >= a.size()) throw UsageError(fmt::format("checkpoint {}: {} needs a value", r.verb, flag), kUsage);
      return a[++i];
    };
    const std::string& w = a[i];
    if ((w == "-o" || w == "--output") && r.verb == "consolidate") {
      r.output = value(w);
    } else if (w == "--dtype" && r.verb == "consolidate") {
      r.dtype = value(w);
    } else if (w == "--format" && r.verb == "consolidate") {
      const std::string word = value(w);
      r.weights_format = config::parse_choice<config::WeightFormat>(word);
      if (!r.weights_format)
        throw UsageError(fmt::format("--format '{}' is not pt, safetensors or hf", word),
                         "pt writes a torch.load-able state dict, safetensors a .safetensors file, hf a folder "
                         "Hugging Face's from_pretrained reads (with --hf-config)");
    } else if (w == "--hf-config" && r.verb == "consolidate") {
      r.hf_config = value(w);
    } else if (w == "--hf-prefix" && r.verb == "consolidate") {
      r.hf_prefix = value(w);
    } else if (w == "--format" && r.verb == "inspect") {
      const std::string word = value(w);
      const auto f = config::parse_choice<config::OutputFormat>(word);
      if (!f) throw UsageError(fmt::format("checkpoint inspect: --format '{}' is not text or json", word));
      r.format = *f;
    } else if (!w.empty() && w[0] == '-') {
      throw UsageError(fmt::format("checkpoint {}: unknown option '{}'", r.verb, w), kUsage);
    } else if (r.dir.empty()) {
      r.dir = w;
    } else {
      throw UsageError(fmt::format("checkpoint {}: unexpected argument '{}'", r.verb, w), kUsage);
    }
  }
  if (r.dir.empty()) throw UsageError(fmt::format("checkpoint {}: missing the checkpoint folder DIR", r.verb), kUsage);
  if (r.verb == "consolidate" && r.output.empty()) {
    throw UsageError("checkpoint consolidate: missing -o FILE (where to write the state dict)", kUsage);
  }
  return r;
}

// The exit code once what was printed has reached standard output: a full disk or a closed
// descriptor (`checkpoint verify > /dev/full`) is an error, not an "ok" nobody could read.
int flushed(std::ostream& out, int code) {
  out.flush();
  if (!out) {
    throw RuntimeFailure("checkpoint: cannot write to standard output",
                         "standard output is closed, on a full disk or a pipe whose reader is gone; redirect it to a "
                         "file with room");
  }
  return code;
}

}  // namespace

int run_checkpoint_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const Args a = parse(args);
  if (a.verb == "consolidate") {
    ConsolidateOptions o;
    o.dir = a.dir;
    o.output = a.output;
    o.dtype = a.dtype;
    o.format = a.weights_format;
    o.hf_config = a.hf_config;
    o.hf_prefix = a.hf_prefix;
    const config::WeightFormat format = consolidate_format(o);
    const ConsolidateResult r = consolidate_checkpoint(o);
    if (format == config::WeightFormat::Hf) {
      out << fmt::format("wrote {}/model.safetensors and config.json (hf; {} tensors, {} parameters, {} "
                         "bytes, {}; names without '{}')\n",
                         a.output, r.tensors, r.elements, r.bytes, a.dtype, r.hf_prefix);
      return 0;
    }
    out << fmt::format(
        "wrote {} ({}; {} tensors, {} parameters, {} bytes, {}; at most one tensor of "
        "{} bytes in memory)\n",
        a.output, config::to_string(format), r.tensors, r.elements, r.bytes, a.dtype, r.largest_tensor_bytes);
    return flushed(out, 0);
  }
  if (a.verb == "inspect") {
    const auto j = inspect_checkpoint(a.dir);
    out << (a.format == config::OutputFormat::Json ? j.dump(2) + "\n" : format_inspection(j));
    return flushed(out, j["verification"]["ok"].get<bool>() ? 0 : 1);
  }
  require_checkpoint_dir(a.dir);
  const VerifyReport rep = verify_checkpoint(a.dir);
  uint64_t bytes = 0;
  for (const auto& f : rep.files) bytes += f.actual_bytes;
  if (rep.manifest_ok && !rep.manifest_checksummed) {
    err << fmt::format("note: {}/manifest.json has no checksum of its own (an older format, read "
                       "as documented): its shards and each record's size against its dtype are "
                       "checked, the rest of its content cannot be\n",
                       a.dir);
  }
  if (rep.ok()) {
    out << fmt::format("{}: ok ({} files, {} bytes, {})\n", a.dir, rep.files.size(), bytes,
                       rep.checksummed ? "sizes and CRC-32C match the manifest"
                                       : "format 1: no checksums, files readable");
    return flushed(out, 0);
  }
  bool named = false;
  for (const auto& f : rep.files) {
    if (f.ok) continue;
    err << fmt::format("error: {}/{}: {}\n", a.dir, f.file, f.problem);
    named = true;
  }
  if (!named) err << "error: " << rep.problem() << "\n";
  return flushed(out, 1);
}

}  // namespace mtrain::trainer
