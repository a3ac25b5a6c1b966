// The estimate as a pure function: model state follows docs/architecture.md §6, the transient
// terms per strategy, the recommendation, the refusal paragraph and --strategy auto.
#include <catch2/catch.hpp>

#include <algorithm>

#include "lib/core/error.hpp"
#include "lib/estimate/estimate.hpp"

using namespace mtrain::estimate;
using mtrain::config::StrategyName;
namespace config = mtrain::config;

namespace {

// A gpt-like shape: L blocks of 12C² and a root of 2VC.
Measured gptish(int64_t L, int64_t C, int64_t V) {
  Measured m;
  m.model.label = "test";
  m.model.params.push_back({"wte.weight", V * C, ""});
  for (int64_t i = 0; i < L; ++i) {
    const std::string b = "blocks." + std::to_string(i);
    m.model.params.push_back({b + ".attn.c_attn.weight", 3 * C * C, b});
    m.model.params.push_back({b + ".attn.c_proj.weight", C * C, b});
    m.model.params.push_back({b + ".mlp.c_fc.weight", 4 * C * C, b});
    m.model.params.push_back({b + ".mlp.c_proj.weight", 4 * C * C, b});
  }
  m.model.params.push_back({"lm_head.weight", V * C, ""});
  m.activations = {1e9, "test", true};
  m.activations_ckpt = {2e8, "test", true};
  m.runtime_bytes = 3e8;
  return m;
}

Candidate cand(StrategyName s, config::ShardingStrategy sharding = config::ShardingStrategy::FullShard) {
  Candidate c;
  c.strategy = s;
  c.sharding = sharding;
  return c;
}

}  // namespace

TEST_CASE("model-state bytes follow docs/architecture.md §6", "[estimate]") {
  const Measured m = gptish(4, 256, 1000);
  const double psi = static_cast<double>(m.model.num_params());
  Settings s;
  s.world = 4;
  s.ranks_per_node = 4;
  Target t;
  const Row ddp = estimate_row(cand(StrategyName::Ddp), s, m, t);
  CHECK(ddp.params + ddp.grads + ddp.optimizer == Approx(16 * psi));
  const Row z1 = estimate_row(cand(StrategyName::Zero1), s, m, t);
  CHECK(z1.params + z1.grads + z1.optimizer == Approx(8 * psi + 8 * psi / 4));
  const Row z2 = estimate_row(cand(StrategyName::Zero2), s, m, t);
  CHECK(z2.params + z2.grads + z2.optimizer == Approx(4 * psi + 12 * psi / 4));
  const Row z3 = estimate_row(cand(StrategyName::Zero3), s, m, t);
  s.zero_persistence_threshold = 0;
  const Row z3p = estimate_row(cand(StrategyName::Zero3), s, m, t);
  CHECK(z3p.params + z3p.grads + z3p.optimizer == Approx(16 * psi / 4));
  CHECK(z3.params >= z3p.params);
  const Row fs = estimate_row(cand(StrategyName::Fsdp, config::ShardingStrategy::FullShard), s, m, t);
  CHECK(fs.params + fs.grads + fs.optimizer == Approx(16 * psi / 4));
  CHECK(fs.gathered > 0);
  const Row sgo = estimate_row(cand(StrategyName::Fsdp, config::ShardingStrategy::ShardGradOp), s, m, t);
  CHECK(sgo.gathered > fs.gathered);  // the whole model stays gathered through the step
  const Row ns = estimate_row(cand(StrategyName::Fsdp, config::ShardingStrategy::NoShard), s, m, t);
  CHECK(ns.params + ns.grads + ns.optimizer == Approx(16 * psi));

  s.precision = config::Precision::Bf16;
  const Row z1b = estimate_row(cand(StrategyName::Zero1), s, m, t);
  CHECK(z1b.params + z1b.grads + z1b.optimizer == Approx(4 * psi + 12 * psi / 4));
  const Row z2b = estimate_row(cand(StrategyName::Zero2), s, m, t);
  CHECK(z2b.params + z2b.grads + z2b.optimizer == Approx(2 * psi + 14 * psi / 4));
}

TEST_CASE("the transient terms are what each engine holds at once", "[estimate]") {
  const Measured m = gptish(4, 256, 1000);
  const double psi = static_cast<double>(m.model.num_params());
  const double blk = 12.0 * 256 * 256, root = 2.0 * 1000 * 256;
  Settings s;
  s.world = 2;
  s.ranks_per_node = 2;
  Target t;
  // ZeRO-3 keeps every module gathered in the forward up to stage3_max_live_parameters, plus the
  // gradients of two modules (the largest: a block's mlp matrix, 4C²).
  const double module = 4.0 * 256 * 256;
  CHECK(estimate_row(cand(StrategyName::Zero3), s, m, t).gathered == Approx(4 * psi + 4 * 2 * module));
  s.zero_max_live = static_cast<int64_t>(module);
  CHECK(estimate_row(cand(StrategyName::Zero3), s, m, t).gathered == Approx(4 * 2 * module + 4 * 2 * module));
  // FULL_SHARD: the root unit beside the block in use and the one prefetched, two units' gradients.
  CHECK(estimate_row(cand(StrategyName::Fsdp, config::ShardingStrategy::FullShard), s, m, t).gathered ==
        Approx(4 * (root + 2 * blk) + 4 * 2 * std::max(blk, root)));
  // ZeRO-2: one reduce bucket of unsharded gradients and its reduced shard.
  s.zero_reduce_bucket = static_cast<int64_t>(psi / 2);
  CHECK(estimate_row(cand(StrategyName::Zero2), s, m, t).buckets == Approx(4 * (psi / 2) * 1.5));
  // A parameter larger than the bucket is a bucket of its own (the mlp matrices, 4C²).
  s.zero_reduce_bucket = 1000;
  CHECK(estimate_row(cand(StrategyName::Zero2), s, m, t).buckets == Approx(4 * (4.0 * 256 * 256) * 1.5));
  s.zero_reduce_bucket = static_cast<int64_t>(psi / 2);
  // overlap_comm: the bucket being filled beside the one being reduced, two buckets at most.
  s.zero2_overlap = true;
  CHECK(estimate_row(cand(StrategyName::Zero2), s, m, t).buckets == Approx(4 * (psi / 2) * 2));
  s.zero2_overlap = false;
  // ZeRO-1 reduce-scatters and all-gathers in place in its resident buffers: no staging buffer.
  CHECK(estimate_row(cand(StrategyName::Zero1), s, m, t).buckets == 0);
  s.world = s.ranks_per_node = 1;
  CHECK(estimate_row(cand(StrategyName::Zero2), s, m, t).buckets == Approx(4 * (psi / 2)));
}

TEST_CASE("a model of one unit has one unit's gradients in flight, DDP one bucket", "[estimate]") {
  Measured m;
  m.model.params = {{"layers.0.weight", 1000000, ""}, {"layers.1.weight", 500000, ""}};
  Settings s;
  s.world = s.ranks_per_node = 2;
  Target t;
  // No blocks: the root unit is the only unit, gathered and its gradients unsharded once.
  CHECK(estimate_row(cand(StrategyName::Fsdp, config::ShardingStrategy::FullShard), s, m, t).gathered == Approx(4 * 1.5e6 + 4 * 1.5e6));
  CHECK(estimate_row(cand(StrategyName::Fsdp, config::ShardingStrategy::NoShard), s, m, t).buckets == 0);
  s.ddp_bucket_mb = 1;
  CHECK(estimate_row(cand(StrategyName::Ddp), s, m, t).buckets == Approx(1048576.0));
  s.ddp_bucket_mb = 100;  // never more than the gradients themselves
  CHECK(estimate_row(cand(StrategyName::Ddp), s, m, t).buckets == Approx(4 * 1.5e6));
}

TEST_CASE("the final export adds rank 0's copy of the weights beyond the memory training freed", "[estimate]") {
  Measured m = gptish(2, 64, 100);
  const double psi = static_cast<double>(m.model.num_params());
  m.activations = {1e3, "test", true};  // small: the copy does not fit in what training frees
  Settings s;
  s.world = s.ranks_per_node = 2;
  Target cpu;
  const Row plain = estimate_row(cand(StrategyName::Zero1), s, m, cpu);
  CHECK(plain.export_copy == 0);
  s.scripted_export = true;
  // ZeRO-1 in fp32: no buckets, no gathered units; the copy less the freed activations.
  const Row z1 = estimate_row(cand(StrategyName::Zero1), s, m, cpu);
  CHECK(z1.buckets == 0);
  CHECK(z1.export_copy == Approx(4 * psi - 1e3));
  CHECK(z1.total == Approx(plain.total + 4 * psi - 1e3));
  // DDP's parameters are saved as they are: no copy.
  CHECK(estimate_row(cand(StrategyName::Ddp), s, m, cpu).export_copy == 0);
  // ZeRO-3 frees its gathered units and gradient buckets: the copy takes that memory first.
  const Row z3 = estimate_row(cand(StrategyName::Zero3), s, m, cpu);
  CHECK(z3.export_copy == Approx(std::max(0.0, 4 * psi - (z3.activations + z3.gathered + z3.buckets))));
  // Activations larger than the copy absorb it whole (ts-lm: 147 MiB beside a copy of 80).
  m.activations = {8 * psi, "test", true};
  CHECK(estimate_row(cand(StrategyName::Zero1), s, m, cpu).export_copy == 0);
  // The copy is in host memory: a GPU's rank does not hold it.
  m.activations = {1e3, "test", true};
  Target gpu;
  gpu.gpu = true;
  CHECK(estimate_row(cand(StrategyName::Zero1), s, m, gpu).export_copy == 0);
  // 16-bit resident parameters are gathered to fp32 one unit at a time, on every rank, GPU too.
  s.precision = config::Precision::Bf16;
  s.zero_reduce_bucket = static_cast<int64_t>(psi / 4);
  CHECK(estimate_row(cand(StrategyName::Zero2), s, m, gpu).export_copy == Approx(4 * (psi / 4)));
  CHECK(estimate_row(cand(StrategyName::Zero3), s, m, gpu).export_copy == 0);
}

TEST_CASE("communication per step by formula", "[estimate]") {
  const Measured m = gptish(2, 128, 500);
  const double psi = static_cast<double>(m.model.num_params());
  Settings s;
  s.world = 4;
  s.ranks_per_node = 4;
  CHECK(estimate_row(cand(StrategyName::Ddp), s, m, {}).comm_bytes == Approx(4 * 2 * psi * 3 / 4));
  CHECK(estimate_row(cand(StrategyName::Zero3), s, m, {}).comm_bytes == Approx(4 * 3 * psi * 3 / 4));
  s.world = 1;
  CHECK(estimate_row(cand(StrategyName::Zero3), s, m, {}).comm_bytes == 0);
}

TEST_CASE("HYBRID_SHARD shards over the ranks of one node", "[estimate]") {
  const Measured m = gptish(2, 128, 500);
  const double psi = static_cast<double>(m.model.num_params());
  Settings s;
  s.world = 8;
  s.ranks_per_node = 2;
  const Row h = estimate_row(cand(StrategyName::Fsdp, config::ShardingStrategy::HybridShard), s, m, {});
  CHECK(h.params + h.grads + h.optimizer == Approx(16 * psi / 2));
}

TEST_CASE("offload moves state off a GPU only", "[estimate]") {
  const Measured m = gptish(2, 128, 500);
  Settings s;
  s.world = 2;
  s.ranks_per_node = 2;
  Candidate c = cand(StrategyName::Zero2);
  c.offload = true;
  Target gpu;
  gpu.gpu = true;
  const Row on_gpu = estimate_row(c, s, m, gpu);
  CHECK(on_gpu.optimizer == 0);
  CHECK(on_gpu.host > 0);
  const Row on_cpu = estimate_row(c, s, m, Target{});
  CHECK(on_cpu.optimizer > 0);
  CHECK(on_cpu.host == 0);
}

TEST_CASE("the recommendation is the fastest row that fits", "[estimate]") {
  const Measured m = gptish(8, 512, 8000);
  Settings s;
  s.world = 4;
  s.ranks_per_node = 4;
  s.strategy = config::StrategyName::Ddp;
  Target t;
  t.gpu = true;
  t.what = "test";
  t.bytes_per_rank = 1e12;  // everything fits: ddp
  Estimate e = estimate(s, m, t);
  REQUIRE(e.recommended);
  CHECK(e.rows[*e.recommended].c.label() == "ddp");
  // Only the sharded rows fit.
  const Row ddp = e.rows[0];
  const Row z3 = estimate_row(cand(StrategyName::Zero3), s, m, t);
  t.bytes_per_rank = (z3.total + ddp.total) / 2;
  e = estimate(s, m, t);
  REQUIRE(e.recommended);
  CHECK_FALSE(e.rows[0].fits);
  CHECK(e.rows[*e.recommended].total <= t.bytes_per_rank);
  CHECK_THAT(e.why, Catch::Contains("the fastest that fits"));
  const auto [row, line] = choose_auto(e);
  CHECK(row.c.label() == e.rows[*e.recommended].c.label());
  CHECK_THAT(line, Catch::StartsWith("--strategy auto chose"));
}

TEST_CASE("a job that does not fit is refused with the two cheapest changes", "[estimate]") {
  const Measured m = gptish(8, 512, 8000);
  Settings s;
  s.world = 4;
  s.ranks_per_node = 4;
  s.strategy = config::StrategyName::Ddp;
  Target t;
  t.gpu = true;
  t.what = "4 x test GPU";
  const Row z3 = estimate_row(cand(StrategyName::Zero3), s, m, t);
  t.bytes_per_rank = z3.total * 1.01;
  const Estimate e = estimate(s, m, t);
  const auto cur = current_row(e);
  REQUIRE(cur);
  CHECK_FALSE(cur->fits);
  const std::string p = refusal_paragraph(e, *cur);
  CHECK_THAT(p, Catch::Contains("this job does not fit: ddp needs about"));
  CHECK_THAT(p, Catch::Contains("4 x test GPU"));
  CHECK_THAT(p, Catch::Contains("The cheapest changes that fit: `--strategy"));
  CHECK(cheapest_fixes(e, *cur, 2).size() == 2);
  // Nothing fits: auto says so (exit 2).
  t.bytes_per_rank = 1;
  const Estimate none = estimate(s, m, t);
  CHECK_FALSE(none.recommended);
  CHECK_THROWS_AS(choose_auto(none), mtrain::Error);
}

TEST_CASE("sizes parse with binary and decimal units", "[estimate]") {
  CHECK(*parse_bytes("80GiB") == Approx(80.0 * 1073741824));
  CHECK(*parse_bytes("24GB") == Approx(24e9));
  CHECK(*parse_bytes("512 MiB") == Approx(512.0 * 1048576));
  CHECK(*parse_bytes("1.5TiB") == Approx(1.5 * 1099511627776.0));
  CHECK(*parse_bytes("1000") == 1000);
  CHECK_FALSE(parse_bytes("lots"));
  CHECK_FALSE(parse_bytes("80 parsecs"));
  CHECK(mtrain::human_bytes(80.0 * 1073741824) == "80.0 GiB");
}

TEST_CASE("the table's sizes are in a unit that shows them, parameters as K/M/B", "[estimate]") {
  Settings s;
  s.world = 2;
  s.ranks_per_node = 2;
  s.strategy = config::StrategyName::Ddp;
  Target t;
  t.what = "test";
  t.bytes_per_rank = 1e12;
  // Issue 45: a 26K-parameter model printed "Ψ = 26404 parameters (0.00B)" and a table of 0.00 GiB.
  Measured small = gptish(1, 16, 400);
  small.activations = {1e6, "test", true};
  small.runtime_bytes = 4e8;
  const std::string text = render_text(estimate(s, small, t));
  INFO(text);
  CHECK_THAT(text, Catch::Contains("Ψ = 15872 parameters (15.9K)"));
  CHECK_THAT(text, Catch::Contains("strategy (MiB per rank)"));
  CHECK_THAT(text, !Catch::Contains(" 0.00      0.00      0.00"));
  // A big model stays in GiB, its count in B.
  const std::string big = render_text(estimate(s, gptish(32, 4096, 50304), t));
  CHECK_THAT(big, Catch::Contains("strategy (GiB per rank)"));
  CHECK_THAT(big, Catch::Contains("B)"));
  CHECK_THAT(render_text(estimate(s, gptish(2, 256, 8000), t)), Catch::Contains("M)"));
}
