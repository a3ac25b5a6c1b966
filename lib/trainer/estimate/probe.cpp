#include "lib/trainer/estimate/probe.hpp"

#include <malloc.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/trainer/comm/pooled_cpu.hpp"
#include "lib/trainer/data/dataset.hpp"
#include "lib/trainer/loop/train_job.hpp"
#include "lib/trainer/model/model.hpp"

namespace mtrain::trainer {

namespace {

// VmRSS or VmHWM of this process in bytes; -1 when /proc is not there.
int64_t status_bytes(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string k = std::string(key) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(k, 0) == 0) return std::stoll(line.substr(k.size())) * 1024;
  }
  return -1;
}

// Lowers VmHWM to the current VmRSS; false where the kernel refuses.
bool reset_high_water_mark() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

// The unit a parameter belongs to: the longest block prefix of its name, or "" (the root unit).
std::string unit_of(const std::string& name, const std::vector<std::string>& prefixes) {
  std::string best;
  for (const auto& p : prefixes)
    if (name.size() > p.size() && name.compare(0, p.size(), p) == 0 && name[p.size()] == '.' && p.size() > best.size())
      best = p;
  return best;
}

}  // namespace

EstimateProbeOptions parse_estimate_probe_args(const std::vector<std::string>& args) {
  EstimateProbeOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--job" && i + 1 < args.size()) {
      o.job_path = args[++i];
    } else if (a == "--batches" && i + 1 < args.size()) {
      o.batches.clear();
      for (const auto& t : str::split(args[++i], ',')) {
        const auto v = str::parse_uint(str::trim(t));
        if (!v || *v < 1) throw UsageError(fmt::format("estimate-probe: batch '{}' is not a positive count", t), "");
        o.batches.push_back(static_cast<int64_t>(*v));
      }
    } else if (a == "--warmup" && i + 1 < args.size() && (args[i + 1] == "0" || args[i + 1] == "1")) {
      o.warmup = args[++i] == "1";
    } else {
      throw UsageError(fmt::format("estimate-probe: unexpected argument '{}'", a),
                       "usage: mtrain-worker estimate-probe --job FILE [--batches 1,2] [--warmup 0|1]");
    }
  }
  if (o.job_path.empty() || o.batches.empty())
    throw UsageError("estimate-probe needs --job FILE",
                     "usage: mtrain-worker estimate-probe --job FILE [--batches 1,2] [--warmup 0|1]");
  return o;
}

namespace {

TrainJob read_probe_job(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("estimate-probe: cannot read the job file '{}'", path));
  std::stringstream text;
  text << in.rdbuf();
  return train_job_from_json(nlohmann::json::parse(text.str()), path);
}

// The parameters (name, size, unit), their count and the buffers' bytes, into `out`.
void describe_parameters(torch::nn::Module& model, const std::vector<std::string>& prefixes, nlohmann::json& out) {
  nlohmann::json params = nlohmann::json::array();
  int64_t psi = 0;
  // A tied weight (GPT-2's lm_head and wte) is one tensor, listed under each name by a TorchScript
  // module's named_parameters; the trainer holds it once, so it is counted once (issue 44 item 5:
  // a traced GPT-2 of 20.0M parameters was estimated as 24.2M).
  std::set<const void*> seen;
  for (const auto& p : model.named_parameters()) {
    if (p.value().numel() > 0 && !seen.insert(p.value().data_ptr()).second) continue;
    params.push_back({{"name", p.key()}, {"numel", p.value().numel()}, {"unit", unit_of(p.key(), prefixes)}});
    psi += p.value().numel();
  }
  int64_t buffer_bytes = 0;
  for (const auto& b : model.named_buffers()) buffer_bytes += b.value().numel() * b.value().element_size();
  out["num_params"] = psi;
  out["params"] = std::move(params);
  out["buffer_bytes"] = buffer_bytes;
  out["blocks"] = prefixes;
}

// The forward/backward passes at each batch size: the resident growth above the pass's start
// (activations), and once the warm-up's residue (what the first pass makes and keeps).
class PassMeter {
 public:
  PassMeter(TaskModel& model, const Dataset& data, const EstimateProbeOptions& o)
      : model_(model), data_(data), o_(o), n_(std::max<int64_t>(data.size(), 1)) {}

  // Activations with blocks kept and, for a model with blocks, recomputed (checkpointing).
  nlohmann::json measure(bool recompute) {
    model_.set_activation_checkpointing(recompute);
    nlohmann::json points = nlohmann::json::array();
    for (int64_t b : o_.batches) {
      std::vector<int64_t> idx;
      for (int64_t i = 0; i < b; ++i) idx.push_back(i % n_);
      const Batch batch = data_.batch(idx);
      int64_t act = 0;
      // Pass 0 warms up (lazily made state); the measured pass is what every later step does.
      for (int pass = o_.warmup ? 0 : 1; pass < 2; ++pass) {
        // What the previous pass freed goes back to the system, so the mark counts this pass alone.
        if (pooled_cpu_allocator_installed()) cpu_block_pool().trim();
        malloc_trim(0);
        reset_ok_ = reset_high_water_mark() && reset_ok_;
        const int64_t before = status_bytes("VmRSS");
        if (pass == 0 && rss_before_warmup_ < 0) rss_before_warmup_ = before;
        if (pass == 1 && rss_before_warmup_ >= 0 && rss_after_warmup_ < 0) rss_after_warmup_ = before;
        at::Tensor loss = model_.loss(batch);
        loss.backward();
        act = status_bytes("VmHWM") - before;
      }
      points.push_back({{"batch", b}, {"peak_above_bytes", std::max<int64_t>(act, 0)}});
    }
    return points;
  }

  // What the first forward/backward makes once and keeps (TorchScript's optimised plans, oneDNN's
  // kernels and caches, autograd's threads): resident after the warm-up pass, before the model's
  // first measured pass, and in every step of a run — neither runtime nor activations.
  std::optional<int64_t> warmup_residue() const {
    if (rss_before_warmup_ < 0 || rss_after_warmup_ < 0) return std::nullopt;
    return std::max<int64_t>(rss_after_warmup_ - rss_before_warmup_, 0);
  }
  bool high_water_reset() const { return reset_ok_; }

 private:
  TaskModel& model_;
  const Dataset& data_;
  const EstimateProbeOptions& o_;
  int64_t n_;
  bool reset_ok_ = true;
  int64_t rss_before_warmup_ = -1, rss_after_warmup_ = -1;
};

}  // namespace

nlohmann::json run_estimate_probe(const EstimateProbeOptions& o) {
  nlohmann::json out;
  malloc_trim(0);
  out["rss_start_bytes"] = status_bytes("VmRSS");
  const TrainJob tj = read_probe_job(o.job_path);
  if (tj.threads > 0) at::set_num_threads(static_cast<int>(tj.threads));

  auto model = make_model(tj.model, tj.seed);
  model->train();
  out["rss_model_bytes"] = status_bytes("VmRSS");
  const auto prefixes = model->block_prefixes();
  describe_parameters(*model, prefixes, out);

  // The gradients a step accumulates into (a later step's backward adds to them in place).
  for (auto& p : model->parameters())
    if (p.requires_grad()) p.mutable_grad() = at::zeros_like(p);
  // The passes allocate as the run's steps do: from the block pool where the job uses it
  // (train.cpu_memory_pool, installed by the trainer after setup as here). glibc's allocator
  // peaks higher for the same tensors (issue 44 item 5: a traced GPT-2's pass at batch 4 rose
  // 278-326 MiB on glibc, 201 on the pool, and the run's first step 228 with its warm-up state),
  // which had every strategy's estimate 65-80 MiB above the run's peak.
  if (tj.cpu_memory_pool) install_pooled_cpu_allocator();
  out["allocator"] = pooled_cpu_allocator_installed() ? "block pool" : "system";
  const auto data = make_dataset(tj.data, tj.model, Split::Train, tj.seed);
  PassMeter meter(*model, *data, o);
  out["points"] = meter.measure(false);
  if (const auto residue = meter.warmup_residue()) out["warmup_residue_bytes"] = *residue;
  if (!prefixes.empty()) {
    // A model whose blocks cannot be recomputed as configured (a TorchScript model whose
    // fsdp.wrap_module_types selects no block) is measured without recomputation only; the
    // estimate then offers no checkpointing variant. The reason goes with the answer.
    try {
      out["points_checkpointed"] = meter.measure(true);
    } catch (const Error& e) {
      out["checkpointed_error"] = e.what();
      model->set_activation_checkpointing(false);
    }
  }
  out["high_water_reset"] = meter.high_water_reset();
  if (data->size() > 0) {
    // Tokens per sample (a language model's sequence) and what one sample's input holds.
    out["language_model"] = model->is_language_model();
    if (model->is_language_model()) out["tokens_per_sample"] = model->tokens_per_sample();
  }
  return out;
}

}  // namespace mtrain::trainer
