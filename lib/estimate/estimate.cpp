#include "lib/estimate/estimate.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "lib/config/model_state.hpp"
#include "lib/config/registry.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::estimate {

using config::StrategyName;

int64_t ModelShape::num_params() const {
  int64_t n = 0;
  for (const auto& p : params) n += p.numel;
  return n;
}

int64_t ModelShape::largest_unit() const {
  std::map<std::string, int64_t> units;
  for (const auto& p : params) units[p.unit] += p.numel;
  int64_t best = 0;
  for (const auto& [u, n] : units) best = std::max(best, n);
  return best;
}

namespace {

bool mixed(const Settings& s) { return s.precision != config::Precision::Fp32; }

// Elements of the two largest groups (units or modules): what is unsharded at once when one is
// being filled while the other is reduced; a model of one group has only that one.
int64_t two_largest(const std::map<std::string, int64_t>& groups) {
  int64_t a = 0, b = 0;
  for (const auto& [k, n] : groups) {
    if (n > a) b = a, a = n;
    else if (n > b) b = n;
  }
  return a + b;
}

std::map<std::string, int64_t> units_of(const ModelShape& m) {
  std::map<std::string, int64_t> u;
  for (const auto& p : m.params) u[p.unit] += p.numel;
  return u;
}

std::map<std::string, int64_t> modules_of(const ModelShape& m) {
  std::map<std::string, int64_t> mods;
  for (const auto& p : m.params) {
    const auto dot = p.name.rfind('.');
    mods[dot == std::string::npos ? std::string() : p.name.substr(0, dot)] += p.numel;
  }
  return mods;
}

// Elements of the largest module's own parameters (a ZeRO-3 unit: DeepSpeed fetches per submodule).
int64_t largest_module(const ModelShape& m) {
  int64_t best = 0;
  for (const auto& [k, n] : modules_of(m)) best = std::max(best, n);
  return best;
}

// Elements of the root unit (what no block holds): FSDP keeps it gathered through the forward.
int64_t root_unit(const ModelShape& m) {
  int64_t n = 0;
  for (const auto& p : m.params)
    if (p.unit.empty()) n += p.numel;
  return n;
}

int64_t largest_block(const ModelShape& m) {
  std::map<std::string, int64_t> units;
  for (const auto& p : m.params)
    if (!p.unit.empty()) units[p.unit] += p.numel;
  int64_t best = 0;
  for (const auto& [u, n] : units) best = std::max(best, n);
  return best;
}

// ZeRO-3: parameters below the persistence threshold stay whole on every rank.
int64_t persistent_params(const ModelShape& m, int64_t threshold) {
  int64_t n = 0;
  for (const auto& p : m.params)
    if (p.numel < threshold) n += p.numel;
  return n;
}

std::string fmt_ratio(int n) { return n > 1 ? fmt::format("(N−1)/N, N = {}", n) : "0 (one rank)"; }

}  // namespace

Settings settings_from_job(const config::JobView& job, int world, int ranks_per_node) {
  const config::StrategyView& st = job.strategy;
  Settings s;
  s.precision = job.precision;
  s.world = std::max(world, 1);
  s.ranks_per_node = std::clamp(ranks_per_node, 1, s.world);
  s.batch = job.batch_size;
  s.activation_checkpointing = st.fsdp_activation_checkpointing;
  s.zero_offload_optimizer = st.zero_offload_optimizer;
  s.zero_offload_param = st.zero_offload_param;
  s.fsdp_cpu_offload = st.fsdp_cpu_offload;
  s.fsdp_sharding = st.fsdp_sharding;
  s.strategy = st.name;
  s.ddp_bucket_mb = st.ddp_bucket_cap_mb;
  // 'auto' is n_embd², as the trainer resolves it (lib/trainer/loop/train_job.cpp).
  if (!st.zero_reduce_bucket_size) {
    const int64_t embd = job.model.n_embd;
    if (embd > 0) s.zero_reduce_bucket = embd * embd;
  } else if (*st.zero_reduce_bucket_size > 0) {
    s.zero_reduce_bucket = *st.zero_reduce_bucket_size;
  }
  if (st.zero_overlap_comm) s.zero2_overlap = *st.zero_overlap_comm;
  if (st.zero_persistence_threshold.value_or(0) > 0) s.zero_persistence_threshold = *st.zero_persistence_threshold;
  if (st.zero_max_live_parameters > 0) s.zero_max_live = st.zero_max_live_parameters;
  s.memory_pool = job.cpu_memory_pool;
  s.scripted_export = job.model.name == config::ModelName::Torchscript;
  return s;
}

std::string Candidate::label() const {
  std::string l = config::to_string(strategy);
  if (strategy == StrategyName::Fsdp) l += "/" + config::to_string(sharding);
  if (offload) l += " + offload";
  if (checkpointing) l += " + ckpt";
  return l;
}

std::vector<std::string> Candidate::flags() const {
  std::vector<std::string> f{"--strategy " + config::to_string(strategy)};
  if (strategy == StrategyName::Fsdp && sharding != config::ShardingStrategy::FullShard)
    f.push_back("--set fsdp.sharding_strategy=" + config::to_string(sharding));
  if (offload)
    f.push_back(strategy == StrategyName::Fsdp ? "--set fsdp.cpu_offload=true" : "--set zero.offload_optimizer_device=cpu");
  if (checkpointing) f.push_back("--set fsdp.activation_checkpointing=true");
  return f;
}

namespace {

// What one candidate shards, holds transiently and sends (docs/architecture.md §6).
struct Layout {
  double gathered = 0, buckets = 0;  // bytes
  double grads_in_flight = 0;        // of those, autograd's unsharded gradients
  // Resident parameters kept in 16 bits: the export gathers the fp32 masters of one unit at a
  // time into a fresh flat buffer (elements of the largest unit); 0 where it reads them in place.
  double export_unit = 0;
  double comm_elems = 0;             // elements sent per rank and step
  std::string comm_formula;
};

// The shard group: HYBRID_SHARD shards over the ranks of one node.
int shard_group(const Candidate& c, const Settings& s) {
  const bool hybrid = c.strategy == StrategyName::Fsdp && c.sharding == config::ShardingStrategy::HybridShard;
  return hybrid ? s.ranks_per_node : s.world;
}

Layout fsdp_layout(const Candidate& c, const Settings& s, const ModelShape& m, double pb, double gb) {
  Layout l;
  const double psi = static_cast<double>(m.num_params()), N = shard_group(c, s), ratio = (N - 1) / N;
  const double blk = static_cast<double>(largest_block(m)), root = static_cast<double>(root_unit(m));
  if (c.sharding == config::ShardingStrategy::NoShard) {
    // Parameters and gradients are views of the persistent flat buffers: nothing more.
    if (mixed(s))
      for (const auto& [name, n] : units_of(m)) l.export_unit = std::max(l.export_unit, static_cast<double>(n));
    l.comm_elems = 2 * psi * ratio;
    l.comm_formula = "all-reduce 2Ψ" + fmt_ratio(static_cast<int>(N));
    return l;
  }
  // Unsharded gradients: the unit being filled beside the one whose reduction is in flight.
  const double unit_grads = gb * static_cast<double>(two_largest(units_of(m)));
  l.grads_in_flight = unit_grads;
  if (c.sharding == config::ShardingStrategy::ShardGradOp) {
    // Parameters stay gathered from forward through backward: the whole model at once.
    l.gathered = pb * psi + unit_grads;
    l.comm_elems = 2 * psi * ratio;
    l.comm_formula = "all-gather Ψ + reduce-scatter Ψ, ×" + fmt_ratio(static_cast<int>(N));
    return l;
  }
  // The root unit stays gathered through the forward beside the block in use and the one
  // prefetched (measured: gathered peak = root + 2 blocks at every world size).
  l.gathered = pb * (root + 2 * blk) + unit_grads;
  l.comm_elems = 3 * psi * ratio;
  l.comm_formula = "all-gather 2Ψ + reduce-scatter Ψ, ×" + fmt_ratio(static_cast<int>(N));
  if (c.sharding == config::ShardingStrategy::HybridShard && s.world > N) {
    const double M = static_cast<double>(s.world) / N;
    l.comm_elems += 2 * (psi / N) * (M - 1) / M;
    l.comm_formula += fmt::format(" + all-reduce 2Ψ/N(M−1)/M across M = {} nodes", s.world / static_cast<int>(N));
  }
  return l;
}

Layout layout_of(const Candidate& c, const Settings& s, const ModelShape& m) {
  const double psi = static_cast<double>(m.num_params());
  const double pb = config::param_bytes(s.precision), gb = pb;
  const int n = shard_group(c, s);
  const double ratio = (n - 1.0) / n;
  Layout l;
  // ZeRO-1/2 reduce-scatter the gradients and all-gather the updated parameters in place, in
  // the resident flat buffers (lib/trainer/strategy/sharded_engine.cpp): no staging buffer.
  // A reduce bucket holds whole parameters: one larger than reduce_bucket_size is a bucket alone.
  int64_t largest_param = 0;
  for (const auto& p : m.params) largest_param = std::max(largest_param, p.numel);
  const double reduce_unit =
      std::min<double>(static_cast<double>(std::max(s.zero_reduce_bucket, largest_param)), psi);
  switch (c.strategy) {
    case StrategyName::Ddp:
      // Gradients are views of the flat buckets; one bucket (ddp.bucket_cap_mb) is in flight
      // in the all-reduce (measured: DDP's peak is 16Ψ + runtime + activations + about a bucket).
      l.buckets = std::min(gb * psi, s.ddp_bucket_mb * 1048576.0);
      l.comm_elems = 2 * psi * ratio;
      l.comm_formula = "all-reduce 2Ψ" + fmt_ratio(n);
      break;
    case StrategyName::Zero1:
      if (mixed(s)) l.export_unit = reduce_unit;
      l.comm_elems = 2 * psi * ratio;
      l.comm_formula = "reduce-scatter Ψ + all-gather Ψ, ×" + fmt_ratio(n);
      break;
    case StrategyName::Zero2: {
      // One reduce bucket of autograd's unsharded gradients and the reduced shard it yields
      // (nothing to reduce on one rank); with overlap_comm the next bucket fills while one is
      // reduced, and the engine keeps the two within two buckets (sharded_engine.hpp).
      const double bucket = gb * reduce_unit;
      l.buckets = bucket * (n > 1 ? 1 + 1 / static_cast<double>(n) : 1);
      if (n > 1 && s.zero2_overlap) l.buckets = 2 * bucket;
      l.grads_in_flight = bucket;
      if (mixed(s)) l.export_unit = reduce_unit;
      l.comm_elems = 2 * psi * ratio;
      l.comm_formula = "reduce-scatter Ψ + all-gather Ψ, ×" + fmt_ratio(n);
      break;
    }
    case StrategyName::Zero3:
      // The forward keeps every module it gathered while it may be used again within
      // stage3_max_reuse_distance, up to stage3_max_live_parameters elements (DeepSpeed's
      // defaults, 1e9 each: the whole model below 1B parameters); the gradients of the module
      // being filled and of the one being reduced are unsharded beside them.
      l.gathered = pb * std::min(psi, static_cast<double>(s.zero_max_live) + static_cast<double>(largest_module(m))) +
                   gb * static_cast<double>(two_largest(modules_of(m)));
      l.grads_in_flight = gb * static_cast<double>(two_largest(modules_of(m)));
      l.comm_elems = 3 * psi * ratio;
      l.comm_formula = "all-gather 2Ψ + reduce-scatter Ψ, ×" + fmt_ratio(n);
      break;
    case StrategyName::Fsdp: l = fsdp_layout(c, s, m, pb, gb); break;
  }
  // One rank sends nothing; the sharded engines still gather (copy) their units as at any
  // world size.
  return l;
}

// The tie-break of an FSDP mode: the less it shards, the less it gathers per step.
double sharding_cost(config::ShardingStrategy m) {
  switch (m) {
    case config::ShardingStrategy::NoShard: return 0.005;
    case config::ShardingStrategy::ShardGradOp: return 0.03;
    case config::ShardingStrategy::HybridShard: return 0.035;
    case config::ShardingStrategy::FullShard: return 0.045;
  }
  return 0.045;
}

// Relative step time: elements sent per step over Ψ, plus what recomputation and offload add
// (one more forward; the update in host memory and its copies), and tie-breaks in the order of
// the table (ddp before zero1 before zero2 …): less work per step first.
double speed_cost(const Candidate& c, double comm_elems, double psi) {
  double cost = (psi > 0 ? comm_elems / psi : 0) + (c.checkpointing ? 1.0 : 0) + (c.offload ? 1.5 : 0);
  switch (c.strategy) {
    case StrategyName::Ddp: break;
    case StrategyName::Zero1: cost += 0.01; break;
    case StrategyName::Zero2: cost += 0.02; break;
    case StrategyName::Zero3: cost += 0.04; break;
    case StrategyName::Fsdp:
      cost += sharding_cost(c.sharding);
      break;
  }
  return cost;
}

// CPU ranks of one host reduce and gather through one shared-memory segment that every rank maps
// and touches whole (lib/trainer/comm/shm_collectives.cpp): N + 1 slots of up to 4 MiB, at most
// 32 MiB together; none at one rank. GPU ranks use NCCL's buffers instead, not counted.
double shm_segment_bytes(int world) {
  if (world <= 1) return 0;
  const double slot = std::min(4.0 * 1048576, 32.0 * 1048576 / (world + 1));
  return slot * (world + 1);
}

}  // namespace

Row estimate_row(const Candidate& c, const Settings& s, const Measured& m, const Target& t) {
  Row r;
  r.c = c;
  const double psi = static_cast<double>(m.model.num_params());
  const double pb = config::param_bytes(s.precision), gb = pb;
  const double N = shard_group(c, s);
  const Layout l = layout_of(c, s, m.model);
  // The model states of §6, as the trainer's ledger counts them (config/model_state.hpp).
  const config::ModelStateBytes state = config::expected_model_state_bytes(c.strategy, c.sharding, s.precision,
                                                                           m.model.num_params(), static_cast<int>(N));
  r.params = state.params;
  if (c.strategy == StrategyName::Zero3 && N > 1)
    r.params += pb * static_cast<double>(persistent_params(m.model, s.zero_persistence_threshold)) * (N - 1) / N;
  r.grads = state.grads;
  r.optimizer = state.optimizer;
  const Activations& act = c.checkpointing ? m.activations_ckpt : m.activations;
  r.gathered = l.gathered;
  r.buckets = l.buckets;
  // All of the probe's bytes, its batch-independent part too: subtracting that part as the
  // unsharded gradients in flight (counted in buckets/gathered) left ZeRO-2 and the sharded
  // FSDP modes 10-17 MiB short (mlp, ts-lm, ts-conv; docs/estimate-accuracy.md).
  r.activations = act.bytes;
  r.runtime = m.runtime_bytes + (t.gpu ? 0 : shm_segment_bytes(s.world));
  r.comm_bytes = l.comm_elems * gb;
  r.comm_formula = l.comm_formula;
  // Offload: state kept in host memory leaves the device only on a GPU.
  if (c.offload && t.gpu) {
    r.host = r.optimizer + (c.strategy == StrategyName::Fsdp ? r.params : 0);
    if (c.strategy == StrategyName::Fsdp) r.params = 0;
    r.optimizer = 0;
  }
  // Setup: every rank builds the whole fp32 model on its device before it is sharded
  // (make_model), so a sharded strategy's peak is at least the built model beside the parameter
  // storage made from it (the optimizer state comes at the first step).
  const double steady = r.params + r.grads + r.optimizer + r.gathered + r.buckets + r.activations + r.runtime;
  const double setup = r.runtime + 4 * psi + r.params;
  // Export (lib/trainer/loop/weights_export.cpp), after the last step. Rank 0 of a TorchScript
  // job gives the scripted module a copy of every parameter (4Ψ, host memory) and streams
  // torch.jit.save — except under DDP, whose parameters are tensors of their own and are saved
  // as they are. The memory the training freed (activations, gathered units, gradient buckets)
  // stays with the allocator, and the copy takes it first: only the rest adds to the peak
  // (measured: ts-lm's copy of 80 MiB beside 147 MiB of activations adds nothing; ts-conv's 41
  // beside 33 adds about 8). Resident parameters kept in 16 bits are gathered to fp32 one unit
  // at a time on every rank (on the device) into fresh memory.
  const double copy = s.scripted_export && !t.gpu && c.strategy != StrategyName::Ddp ? 4 * psi : 0;
  r.export_copy = std::max(0.0, copy - (r.activations + r.gathered + r.buckets)) + 4 * l.export_unit;
  r.total = std::max(steady + r.export_copy, setup);
  r.speed_cost = speed_cost(c, l.comm_elems, psi);
  r.fits = t.bytes_per_rank <= 0 || r.total <= t.bytes_per_rank;
  return r;
}

namespace {

std::vector<Candidate> table_candidates(const Settings& s, bool ckpt, bool offload) {
  std::vector<Candidate> out;
  for (auto st : {StrategyName::Ddp, StrategyName::Zero1, StrategyName::Zero2, StrategyName::Zero3}) {
    Candidate c;
    c.strategy = st;
    c.checkpointing = ckpt;
    c.offload = offload && st != StrategyName::Ddp;
    if (offload && st == StrategyName::Ddp) continue;
    out.push_back(c);
  }
  for (const auto mode : {config::ShardingStrategy::FullShard, config::ShardingStrategy::ShardGradOp, config::ShardingStrategy::NoShard,
                          config::ShardingStrategy::HybridShard}) {
    if (mode == config::ShardingStrategy::HybridShard && s.ranks_per_node >= s.world) continue;  // = FULL_SHARD on one node
    if (offload && mode == config::ShardingStrategy::NoShard) continue;
    Candidate c;
    c.strategy = StrategyName::Fsdp;
    c.sharding = mode;
    c.checkpointing = ckpt;
    c.offload = offload;
    out.push_back(c);
  }
  return out;
}

bool job_offload(const Settings& s) {
  return s.zero_offload_optimizer == config::OffloadDevice::Cpu || s.fsdp_cpu_offload;
}

}  // namespace

Estimate estimate(const Settings& s, const Measured& m, const Target& t) {
  Estimate e;
  e.settings = s;
  e.target = t;
  e.measured = m;
  const bool ckpt = s.activation_checkpointing, off = job_offload(s);
  for (const auto& c : table_candidates(s, ckpt, off)) e.rows.push_back(estimate_row(c, s, m, t));
  // Variants for advice: checkpointing and offload turned on where the job has them off.
  const bool has_blocks = m.activations_ckpt.measured;
  for (bool vc : {false, true})
    for (bool vo : {false, true}) {
      if ((vc == ckpt && vo == off) || (vc && !ckpt && !has_blocks) || (vc < ckpt) || (vo < off)) continue;
      if (vo && !t.gpu) continue;  // offload moves nothing off a CPU rank's memory
      for (const auto& c : table_candidates(s, vc, vo)) e.alternatives.push_back(estimate_row(c, s, m, t));
    }
  std::optional<size_t> best;
  for (size_t i = 0; i < e.rows.size(); ++i)
    if (e.rows[i].fits && (!best || e.rows[i].speed_cost < e.rows[*best].speed_cost)) best = i;
  e.recommended = best;
  if (t.bytes_per_rank <= 0) {
    e.why = "no device memory known (give --device-memory): " +
            (best ? e.rows[*best].c.label() + " is the fastest" : std::string("nothing judged"));
  } else if (best) {
    const Row& r = e.rows[*best];
    const double headroom = t.bytes_per_rank - r.total;
    e.why = fmt::format("{}: the fastest that fits ({} of {} per rank, {} free); it sends {} per rank and step",
                        r.c.label(), human_bytes(r.total), human_bytes(t.bytes_per_rank), human_bytes(headroom),
                        human_bytes(r.comm_bytes));
    if (*best != 0 && !e.rows[0].fits)
      e.why += fmt::format("; {} needs {}", e.rows[0].c.label(), human_bytes(e.rows[0].total));
  } else {
    const auto fixes = cheapest_fixes(e, e.rows.front(), 1);
    e.why = "nothing fits as set" +
            (fixes.empty() ? std::string("; not even with activation checkpointing") + (t.gpu ? " and offload" : "")
                           : "; the fastest change that fits: " + str::join(fixes[0].c.flags(), " "));
  }
  return e;
}

std::optional<Row> current_row(const Estimate& e) {
  const Settings& s = e.settings;
  if (!s.strategy) return std::nullopt;  // auto
  Candidate c;
  c.strategy = *s.strategy;
  if (c.strategy == StrategyName::Fsdp) c.sharding = s.fsdp_sharding;
  c.checkpointing = s.activation_checkpointing;
  c.offload = (c.strategy == StrategyName::Fsdp && s.fsdp_cpu_offload) ||
              (config::is_zero(c.strategy) && s.zero_offload_optimizer == config::OffloadDevice::Cpu);
  if (c.strategy == StrategyName::Fsdp && c.sharding == config::ShardingStrategy::HybridShard && s.ranks_per_node >= s.world) {
    // One node: HYBRID_SHARD is FULL_SHARD.
  }
  return estimate_row(c, s, e.measured, e.target);
}

std::vector<Row> cheapest_fixes(const Estimate& e, const Row& current, size_t n) {
  std::vector<Row> all;
  for (const auto& r : e.rows) all.push_back(r);
  for (const auto& r : e.alternatives) all.push_back(r);
  std::vector<Row> fits;
  for (auto& r : all)
    if (r.fits && r.c.label() != current.c.label()) fits.push_back(r);
  // Cheapest: the fewest flags changed first, then the fastest.
  auto changes = [&](const Row& r) {
    return static_cast<int>(r.c.strategy != current.c.strategy || r.c.sharding != current.c.sharding) +
           static_cast<int>(r.c.checkpointing != current.c.checkpointing) + static_cast<int>(r.c.offload != current.c.offload);
  };
  std::stable_sort(fits.begin(), fits.end(), [&](const Row& a, const Row& b) {
    const int ca = changes(a), cb = changes(b);
    return ca != cb ? ca < cb : a.speed_cost < b.speed_cost;
  });
  if (fits.size() > n) fits.resize(n);
  return fits;
}

namespace {

// The flags that turn `current` into `to` (only what differs).
std::string change_flags(const Row& current, const Row& to) {
  std::vector<std::string> f;
  if (to.c.strategy != current.c.strategy || to.c.sharding != current.c.sharding) {
    f.push_back("--strategy " + config::to_string(to.c.strategy));
    if (to.c.strategy == StrategyName::Fsdp && to.c.sharding != config::ShardingStrategy::FullShard)
      f.push_back("--set fsdp.sharding_strategy=" + config::to_string(to.c.sharding));
  }
  if (to.c.offload && !current.c.offload)
    f.push_back(to.c.strategy == StrategyName::Fsdp ? "--set fsdp.cpu_offload=true" : "--set zero.offload_optimizer_device=cpu");
  if (to.c.checkpointing && !current.c.checkpointing) f.push_back("--set fsdp.activation_checkpointing=true");
  return str::join(f, " ");
}

}  // namespace

std::string refusal_paragraph(const Estimate& e, const Row& cur) {
  std::string out = fmt::format(
      "this job does not fit: {} needs about {} per rank (params {}, grads {}, optimizer {}, gathered {}, "
      "buckets {}, activations {}, runtime {}) and each of the {} rank(s) has {} ({})",
      cur.c.label(), human_bytes(cur.total), human_bytes(cur.params), human_bytes(cur.grads), human_bytes(cur.optimizer),
      human_bytes(cur.gathered), human_bytes(cur.buckets), human_bytes(cur.activations), human_bytes(cur.runtime),
      e.settings.world, human_bytes(e.target.bytes_per_rank), e.target.what);
  const auto fixes = cheapest_fixes(e, cur, 2);
  if (fixes.empty()) {
    out += fmt::format(
        ". No strategy fits, not even with activation checkpointing{}: use more ranks or a smaller "
        "model or batch (`mtrain estimate` shows the table). --force starts it anyway.",
        e.target.gpu ? " and offload" : "");
    return out;
  }
  out += ". The cheapest changes that fit:";
  for (const auto& f : fixes)
    out += fmt::format(" `{}` ({} per rank);", change_flags(cur, f), human_bytes(f.total));
  out.back() = '.';
  out += " `mtrain estimate` with the same flags shows the table; --force starts it anyway.";
  return out;
}

std::pair<Row, std::string> choose_auto(const Estimate& e) {
  if (e.recommended) {
    const Row& r = e.rows[*e.recommended];
    return {r, "--strategy auto chose " + e.why};
  }
  Row first = e.rows.front();
  throw Error("--strategy auto: " + refusal_paragraph(e, first));
}

std::optional<double> parse_bytes(const std::string& in) {
  std::string t = str::trim(in);
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  double v = 0;
  try {
    v = std::stod(t.substr(0, i));
  } catch (...) {
    return std::nullopt;
  }
  std::string unit;
  for (char ch : str::trim(t.substr(i))) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  static const std::map<std::string, double> mult = {
      {"", 1}, {"b", 1},
      {"k", 1024.0}, {"kib", 1024.0}, {"kb", 1e3},
      {"m", 1048576.0}, {"mib", 1048576.0}, {"mb", 1e6},
      {"g", 1073741824.0}, {"gib", 1073741824.0}, {"gb", 1e9},
      {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"tb", 1e12}};
  const auto it = mult.find(unit);
  if (it == mult.end() || v <= 0) return std::nullopt;
  return v * it->second;
}

}  // namespace mtrain::estimate
