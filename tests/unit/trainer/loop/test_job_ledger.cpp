// The ledger of one run from its TrainJob (lib/trainer/loop/job_ledger.cpp): N of the formula,
// the formula's bytes (or "unknown"), and the report's fields taken from the job and the fullest
// rank's measured figures.
#include <catch2/catch.hpp>

#include "lib/trainer/loop/job_ledger.hpp"

using namespace mtrain::trainer;
using mtrain::config::OffloadDevice;
using mtrain::config::Precision;
using mtrain::config::ShardingStrategy;
using mtrain::config::StrategyName;

namespace {
TrainJob job_of(StrategyName s, Precision precision, ShardingStrategy sharding = ShardingStrategy::FullShard) {
  TrainJob j;
  j.strategy = s;
  j.strat.precision = precision;
  j.strat.fsdp.sharding_strategy = sharding;
  return j;
}
}  // namespace

TEST_CASE("job_ledger: N is the world, or the shard group under HYBRID_SHARD", "[loop][job_ledger]") {
  CHECK(job_ledger_world(job_of(StrategyName::Zero3, Precision::Fp32), 8) == 8);
  CHECK(job_ledger_world(job_of(StrategyName::Fsdp, Precision::Fp32, ShardingStrategy::HybridShard), 8) == 8);  // 0 = the whole world
  TrainJob hybrid = job_of(StrategyName::Fsdp, Precision::Fp32, ShardingStrategy::HybridShard);
  hybrid.strat.local_world_size = 4;
  CHECK(job_ledger_world(hybrid, 8) == 4);
  TrainJob full = job_of(StrategyName::Fsdp, Precision::Fp32);
  full.strat.local_world_size = 4;  // only HYBRID_SHARD shards within a node
  CHECK(job_ledger_world(full, 8) == 8);
}

TEST_CASE("job_ledger: the formula's bytes, or unknown with the strategy's name", "[loop][job_ledger]") {
  const auto z1 = job_ledger_formula(job_of(StrategyName::Zero1, Precision::Fp32), "zero1", 1000, 4);
  CHECK(z1.total() == 8 * 1000 + 8 * 1000 / 4);
  CHECK(z1.formula == "8Ψ + 8Ψ/N");
  TrainJob hybrid = job_of(StrategyName::Fsdp, Precision::Bf16, ShardingStrategy::HybridShard);
  hybrid.strat.local_world_size = 2;
  CHECK(job_ledger_formula(hybrid, "fsdp", 1000, 8).total() == 16 * 1000 / 2);
  const auto unknown = job_ledger_formula(job_of(StrategyName::Fsdp, Precision::Fp32), "my-fsdp", 1000, 0);
  CHECK(unknown.total() == 0);
  CHECK(unknown.formula == "unknown for strategy my-fsdp");
}

TEST_CASE("job_ledger: the report holds the job's settings and the measured bytes", "[loop][job_ledger]") {
  TrainJob j = job_of(StrategyName::Zero3, Precision::Bf16);
  j.strat.zero.stage3_param_persistence_threshold = 5000;
  j.strat.zero.offload_optimizer_device = OffloadDevice::Cpu;
  MemoryLedger fullest;
  fullest.params = 100;
  fullest.grads = 200;
  fullest.optimizer = 300;
  fullest.gathered = 40;
  fullest.gathered_peak = 999;  // a peak: not part of the start-of-run table
  const LedgerReport r = job_ledger_report(j, 1234, 4, fullest, 16, true);
  CHECK(r.strategy == StrategyName::Zero3);
  CHECK(r.sharding_strategy == ShardingStrategy::FullShard);
  CHECK(r.precision == Precision::Bf16);
  CHECK(r.psi == 1234);
  CHECK(r.world == 4);
  CHECK(r.world_size == 4);
  CHECK(r.params == 100);
  CHECK(r.grads == 200);
  CHECK(r.optimizer == 300);
  CHECK(r.gathered == 40);
  CHECK(r.buffers == 16);
  CHECK(r.persistence_threshold == 5000);
  CHECK(r.offload == offload_text(StrategyName::Zero3, OffloadDevice::Cpu, OffloadDevice::None, false));
  CHECK_FALSE(r.offload.empty());
  CHECK(r.on_cpu);

  TrainJob hybrid = job_of(StrategyName::Fsdp, Precision::Fp32, ShardingStrategy::HybridShard);
  hybrid.strat.local_world_size = 2;
  const LedgerReport h = job_ledger_report(hybrid, 10, 6, fullest, 0, false);
  CHECK(h.world == 2);
  CHECK(h.world_size == 6);
  CHECK(h.offload.empty());
  CHECK_FALSE(h.on_cpu);
}
