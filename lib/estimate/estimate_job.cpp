#include "lib/estimate/estimate_job.hpp"

#include "lib/core/unique_fd.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "lib/config/names.hpp"
#include "lib/config/registry.hpp"
#include "lib/core/child_process.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/visible_text.hpp"
#include "lib/estimate/activation_scaling.hpp"
#include "lib/estimate/probe_cache.hpp"

namespace mtrain::estimate {

namespace {

// How long one probe may run: it builds the model and runs forward+backward on this CPU, and a
// pass of a 7B-wide gpt slice (measure_slices) takes minutes; half an hour is far beyond any
// model the probe measures whole and still ends a probe stuck in a hung load. Then SIGTERM, and
// SIGKILL 10 s later (core/child_process.hpp).
constexpr std::chrono::minutes kProbeDeadline{30};
constexpr std::chrono::seconds kProbeGrace{10};

// Runs argv (no shell; stdout and stderr through pipes, core/child_process.hpp), returns stdout;
// throws with stderr's tail when it fails. A probe that exits 2 refused its input (the model or
// the job: the worker's usage errors), which is the user's to fix: exit 2 as well.
std::string capture(const std::vector<std::string>& argv) {
  ChildOptions co;
  co.deadline = kProbeDeadline;
  co.grace = kProbeGrace;
  co.max_stderr = 1500;
  const ChildResult r = run_child(argv, co);
  if (!r.started) {
    throw Error(fmt::format("estimate: cannot start {}: {}", argv[0], r.exec_error),
                "build or install mtrain-worker beside mtrain", kExitFailure);
  }
  if (r.exit_code == kExitUsage && !r.timed_out && !r.out_truncated && !r.err_truncated) {
    // The worker refused the job as bad input and said why in its own paragraph (what is wrong,
    // what to try): that paragraph is the whole message; its command line is our business.
    std::string e = visible_text(str::trim(r.err));
    if (str::starts_with(e, "error: ")) e = e.substr(7);
    if (!e.empty()) throw Error(e, "", kExitUsage);
  }
  if (r.exit_code != 0 || r.timed_out || r.out_truncated) {
    std::string e = visible_text(str::trim(r.err));
    if (r.err_truncated) e = "…" + e;
    if (r.timed_out) e = fmt::format("stopped after {} minutes{}", kProbeDeadline.count(), e.empty() ? "" : ": " + e);
    if (r.out_truncated) e = fmt::format("printed more than {} bytes", co.max_stdout);
    // Not the command line: its job file is a temporary one, removed by now (issue 45 item 3).
    throw Error(
        fmt::format("estimate: the probe (mtrain-worker estimate-probe, one forward/backward on this CPU) "
                    "failed (exit {}): {}",
                    r.exit_code, e.empty() ? "no message" : e),
        "check that the model and data settings train (the probe builds the model and runs one step on the CPU)",
        r.exit_code == kExitUsage && !r.timed_out ? kExitUsage : kExitFailure);
  }
  return r.out;
}

nlohmann::json run_probe(const nlohmann::json& job, const std::string& worker, const std::string& batches, bool warmup) {
  // The probe measures one rank's forward/backward, the same under every strategy; a job whose
  // strategy is still `auto` (the launcher resolves it from this very estimate) is probed as ddp.
  nlohmann::json probe_job = job;
  if (probe_job.contains("strategy") && config::is_auto_strategy(probe_job["strategy"].get<std::string>()))
    probe_job["strategy"] = "ddp";
  const std::string text = probe_job.dump();
  const std::vector<std::string> args{"--batches", batches, "--warmup", warmup ? "1" : "0"};
  const std::string key = probe_cache_key(worker, str::join(args, " "), text);
  if (auto cached = probe_cache_get(key)) return *cached;
  char path[] = "/tmp/mtrain-estimate-job.XXXXXX";
  UniqueFd fd(mkstemp(path));
  if (!fd) throw Error("estimate: cannot create a temporary job file", "", kExitFailure);
  const bool wrote =
      ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fd.close() == 0;
  if (!wrote) {
    std::remove(path);
    throw Error("estimate: cannot write the temporary job file", "", kExitFailure);
  }
  std::string out;
  try {
    std::vector<std::string> argv{worker, "estimate-probe", "--job", path};
    argv.insert(argv.end(), args.begin(), args.end());
    out = capture(argv);
  } catch (...) {
    std::remove(path);
    throw;
  }
  std::remove(path);
  const auto start = out.find('{');
  if (start == std::string::npos) throw Error("estimate: the worker's probe printed no result", "", kExitFailure);
  nlohmann::json answer = nlohmann::json::parse(out.substr(start));
  probe_cache_put(key, answer);
  return answer;
}

ModelShape shape_of_probe(const nlohmann::json& p, const std::string& label) {
  ModelShape m;
  m.label = label;
  for (const auto& q : p.at("params")) m.params.push_back({q.at("name"), q.at("numel"), q.at("unit")});
  m.buffer_bytes = p.value("buffer_bytes", int64_t{0});
  return m;
}

std::string model_label(const config::ModelView& m) {
  switch (m.name) {
    case config::ModelName::Gpt:
      return fmt::format("gpt (n_layer {}, n_head {}, n_embd {}, block_size {}, vocab_size {})", m.n_layer, m.n_head,
                         m.n_embd, m.block_size, m.vocab_size);
    case config::ModelName::Mlp:
      return fmt::format("mlp (input_dim {}, hidden {}, depth {}, num_classes {})", m.input_dim, m.hidden, m.depth,
                         m.num_classes);
    case config::ModelName::Torchscript: return "torchscript " + m.path;
    default: return config::to_string(m.name);
  }
}

}  // namespace

std::optional<ModelShape> builtin_shape(const config::ModelView& model) {
  ModelShape m;
  m.label = model_label(model);
  if (model.name == config::ModelName::Gpt) {
    const int64_t L = model.n_layer, C = model.n_embd, T = model.block_size, V = model.vocab_size;
    m.params.push_back({"wte.weight", V * C, ""});
    m.params.push_back({"wpe.weight", T * C, ""});
    for (int64_t i = 0; i < L; ++i) {
      const std::string b = "blocks." + std::to_string(i);
      for (const auto& [n, k] : std::vector<std::pair<std::string, int64_t>>{
               {".ln_1.weight", C}, {".ln_1.bias", C}, {".attn.c_attn.weight", 3 * C * C}, {".attn.c_attn.bias", 3 * C},
               {".attn.c_proj.weight", C * C}, {".attn.c_proj.bias", C}, {".ln_2.weight", C}, {".ln_2.bias", C},
               {".mlp.c_fc.weight", 4 * C * C}, {".mlp.c_fc.bias", 4 * C}, {".mlp.c_proj.weight", 4 * C * C},
               {".mlp.c_proj.bias", C}})
        m.params.push_back({b + n, k, b});
    }
    m.params.push_back({"ln_f.weight", C, ""});
    m.params.push_back({"ln_f.bias", C, ""});
    m.params.push_back({"lm_head.weight", V * C, ""});
    return m;
  }
  if (model.name == config::ModelName::Mlp) {
    const int64_t D = model.depth, H = model.hidden, I = model.input_dim, K = model.num_classes;
    for (int64_t i = 0; i < D; ++i) {
      const int64_t in = i == 0 ? I : H, out = i == D - 1 ? K : H;
      // Each layer is a block (MlpModel::block_prefixes): an FSDP unit of its own.
      const std::string unit = fmt::format("layers.{}", i);
      m.params.push_back({unit + ".weight", in * out, unit});
      m.params.push_back({unit + ".bias", out, unit});
    }
    return m;
  }
  return std::nullopt;
}

ModelShape safetensors_shape(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char len8[8];
  if (!in || !in.read(reinterpret_cast<char*>(len8), 8))
    throw Error(fmt::format("cannot read '{}'", path), "give a .safetensors file");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len8[i];
  if (n < 2 || n > (100u << 20)) throw Error(fmt::format("'{}' is not a safetensors file (header of {} bytes)", path, n));
  std::string header(n, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n))) throw Error(fmt::format("'{}' ends inside its header", path));
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(header);
  } catch (const std::exception&) {
    throw Error(fmt::format("'{}' is not a safetensors file (its header is not JSON)", path));
  }
  ModelShape m;
  m.label = "weights " + path;
  for (const auto& [name, t] : h.items()) {
    if (name == "__metadata__") continue;
    int64_t numel = 1;
    for (const auto& d : t.at("shape")) numel *= d.get<int64_t>();
    std::string unit;
    const auto parts = str::split(name, '.');
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (!parts[i].empty() && str::parse_uint(parts[i])) {
        std::vector<std::string> head(parts.begin(), parts.begin() + static_cast<long>(i) + 1);
        unit = str::join(head, ".");
        break;
      }
    }
    m.params.push_back({name, numel, unit});
  }
  return m;
}

namespace {

const char* points_key(bool recomputed) { return recomputed ? "points_checkpointed" : "points"; }

// The model itself at batch 1, 2, 4 and 8 (docs/estimate.md "Activations are measured").
void measure_whole(const nlohmann::json& job, const config::ModelView& model, const Settings& s,
                   const std::string& worker, bool have_shape, Measured& m) {
  const nlohmann::json p = run_probe(job, worker, "1,2,4,8", true);
  if (!have_shape) m.model = shape_of_probe(p, model_label(model));
  m.model.buffer_bytes = p.value("buffer_bytes", int64_t{0});
  // The worker before the model exists, and what the model's first step makes once and keeps
  // (measured across the warm-up pass: ts-conv's oneDNN and TorchScript state, ~30 MiB).
  m.runtime_bytes = p.at("rss_start_bytes").get<double>() + p.value("warmup_residue_bytes", 0.0);
  m.runtime_how = "measured: resident memory of mtrain-worker before the model exists, and what the model's "
                  "first forward+backward keeps";
  for (bool ck : {false, true}) {
    if (!p.contains(points_key(ck))) continue;
    Activations& a = ck ? m.activations_ckpt : m.activations;
    const LinearBytes fit = fit_points(p[points_key(ck)]);
    a.bytes = fit.at(static_cast<double>(s.batch));
    a.fixed = fit.fixed;
    a.measured = true;
    a.how = fmt::format("measured: one forward+backward of the model on this CPU at batch 1, 2, 4 and 8, fitted linearly and scaled to batch {}{}",
                        s.batch, ck ? ", blocks recomputed" : "");
  }
  if (!p.contains(points_key(true))) m.activations_ckpt = m.activations;
}

// A gpt too large to run here: slices of the same width with 1 and 2 blocks, at batch 1, without
// the warm-up pass (each pass of a 7B-wide slice is minutes of CPU).
void measure_slices(const nlohmann::json& job, const config::ModelView& model, const Settings& s,
                    const std::string& worker, Measured& m) {
  const int64_t L = model.n_layer;
  nlohmann::json pj = job;
  config::set(pj, "model.init", "");
  nlohmann::json p[2];
  for (int l = 1; l <= 2; ++l) {
    config::set(pj, "model.n_layer", l);
    p[l - 1] = run_probe(pj, worker, "1", false);
  }
  m.runtime_bytes = p[0].at("rss_start_bytes").get<double>();
  m.runtime_how = "measured: resident memory of mtrain-worker before the model exists";
  for (bool ck : {false, true}) {
    if (!p[0].contains(points_key(ck)) || !p[1].contains(points_key(ck))) continue;
    const auto at1 = [&](const nlohmann::json& q) { return q[points_key(ck)][0].at("peak_above_bytes").get<double>(); };
    Activations& a = ck ? m.activations_ckpt : m.activations;
    a.bytes = scale_slice(at1(p[0]), at1(p[1]), L).at(static_cast<double>(s.batch));
    a.measured = true;
    a.how = fmt::format(
        "measured on a 1- and a 2-layer slice of the same width (n_embd {}, n_head {}, block_size {}, "
        "vocab_size {}) at batch 1, scaled to {} layers and batch {}{}",
        model.n_embd, model.n_head, model.block_size, model.vocab_size, L, s.batch, ck ? ", blocks recomputed" : "");
  }
}

}  // namespace

Measured measure(const nlohmann::json& job, const config::ModelView& model, const Settings& s,
                 const std::string& worker) {
  Measured m;
  const auto shape = builtin_shape(model);
  const bool gpt = model.name == config::ModelName::Gpt;
  if (shape) m.model = *shape;
  if (worker.empty()) {
    if (!shape) throw Error("estimate: this model's shapes come from mtrain-worker, which was not found",
                            "build or install mtrain-worker beside mtrain", kExitFailure);
    m.activations.how = "not measured (mtrain-worker not found): activations counted as 0";
    m.activations_ckpt = m.activations;
    return m;
  }
  if (gpt && shape && shape->num_params() > kProbeParamLimit) measure_slices(job, model, s, worker, m);
  else measure_whole(job, model, s, worker, shape.has_value(), m);
  return m;
}

namespace {

// nvidia-smi's CSV lines for `fields` (no shell; empty without the driver).
std::string nvidia_smi(const std::string& fields) {
  ChildOptions co;
  co.deadline = std::chrono::seconds(20);
  co.max_stdout = 1u << 20;
  const ChildResult r = run_child({"nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader,nounits"}, co);
  return r.started && r.exit_code == 0 ? r.out : "";
}

}  // namespace

Target detect_target(const JobEstimateOptions& o) {
  Target t;
  if (o.device_memory) {
    t.bytes_per_rank = *o.device_memory;
    // The ranks' device decides what offload can move (issue 45 item 3: CPU ranks were offered
    // optimizer offload, which leaves the state in the same memory): GPUs when asked for, or
    // when the launch would find them.
    t.gpu = o.device == config::DeviceKind::Gpu || (o.device != config::DeviceKind::Cpu && o.gpus > 0);
    t.what = fmt::format("--device-memory {}{}", human_bytes(*o.device_memory), t.gpu ? "" : " (CPU ranks)");
    return t;
  }
  if (o.device != config::DeviceKind::Cpu) {
    const std::string out = nvidia_smi("name,memory.total");
    double least = 0;
    std::string name;
    int gpus = 0;
    for (const auto& line : str::split(out, '\n')) {
      const auto parts = str::split(line, ',');
      if (parts.size() < 2) continue;
      const auto mib = str::parse_uint(str::trim(parts[1]));
      if (!mib) continue;
      const double b = static_cast<double>(*mib) * 1048576.0;
      if (gpus == 0 || b < least) least = b, name = str::trim(parts[0]);
      ++gpus;
    }
    if (gpus > 0) {
      t.bytes_per_rank = least;
      t.gpu = true;
      t.what = fmt::format("{}, {} (nvidia-smi; {} GPU(s) here)", name, human_bytes(least), gpus);
      return t;
    }
  }
  std::ifstream mi("/proc/meminfo");
  std::string line;
  double avail = 0;
  while (std::getline(mi, line))
    if (line.rfind("MemAvailable:", 0) == 0) avail = std::stod(line.substr(13)) * 1024;
  const int per_node = std::max(o.ranks_per_node, 1);
  t.bytes_per_rank = avail / per_node;
  t.gpu = false;
  t.what = fmt::format("this host's available RAM {} shared by {} rank(s) (no GPU)", human_bytes(avail), per_node);
  return t;
}

Estimate estimate_job(const nlohmann::json& job, const JobEstimateOptions& o) {
  const config::JobView view = config::job_view(job);
  const Settings s = settings_from_job(view, o.world, o.ranks_per_node);
  Measured m;
  if (!o.weights.empty()) {
    m.model = safetensors_shape(o.weights);
    m.activations.how = "not measured: a weights file has no forward (give the model to measure them)";
    m.activations_ckpt = m.activations;
  } else {
    m = measure(job, view.model, s, o.worker_path);
  }
  if (s.precision != config::Precision::Fp32) {
    // The probe computes in fp32; under bf16/fp16 the forward runs on 16-bit parameters, so
    // what it keeps for backward is 16-bit.
    for (Activations* a : {&m.activations, &m.activations_ckpt}) {
      if (!a->measured) continue;
      a->bytes /= 2;
      a->fixed /= 2;
      a->how += ", halved for " + config::to_string(s.precision) + " activations";
    }
  }
  return estimate(s, m, detect_target(o));
}

}  // namespace mtrain::estimate
