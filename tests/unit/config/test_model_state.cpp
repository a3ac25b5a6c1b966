// The model-state formula of docs/architecture.md §6 per strategy and precision: the one the
// trainer's ledger prints and `mtrain estimate` builds its rows on.
#include <catch2/catch.hpp>

#include "lib/config/model_state.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::config;

namespace {
// The tables below spell the settings as a job does ("" for fsdp.* under another strategy).
ShardingStrategy SH(const std::string& name) {
  return name.empty() ? ShardingStrategy::FullShard
                      : choice_from_text<ShardingStrategy>(name, "fsdp.sharding_strategy");
}
Precision P(const std::string& name) { return choice_from_text<Precision>(name, "train.precision"); }

void check(const std::string& strategy, const std::string& sharding, const std::string& precision, double params,
           double grads, double optim, const std::string& formula) {
  INFO(strategy << " " << sharding << " " << precision);
  const auto b = expected_model_state_bytes(strategy_from_text(strategy), SH(sharding), P(precision), 1000, 4);
  CHECK(b.params == params);
  CHECK(b.grads == grads);
  CHECK(b.optimizer == optim);
  CHECK(b.formula == formula);
}
}  // namespace

TEST_CASE("expected model-state bytes follow docs/architecture.md §6", "[model_state]") {
  // Ψ = 1000, N = 4.
  check("ddp", "", "fp32", 4000, 4000, 8000, "16Ψ");
  check("zero1", "", "fp32", 4000, 4000, 2000, "8Ψ + 8Ψ/N");
  check("zero2", "", "fp32", 4000, 1000, 2000, "4Ψ + 12Ψ/N");
  check("zero3", "", "fp32", 1000, 1000, 2000, "16Ψ/N");
  check("fsdp", "FULL_SHARD", "fp32", 1000, 1000, 2000, "16Ψ/N");
  check("fsdp", "", "fp32", 1000, 1000, 2000, "16Ψ/N");
  check("fsdp", "SHARD_GRAD_OP", "fp32", 1000, 1000, 2000, "16Ψ/N");  // resharded after backward
  check("fsdp", "NO_SHARD", "fp32", 4000, 4000, 8000, "16Ψ");
  check("fsdp", "HYBRID_SHARD", "fp32", 1000, 1000, 2000, "16Ψ/N");
  check("ddp", "", "bf16", 2000, 2000, 12000, "16Ψ");
  check("zero1", "", "bf16", 2000, 2000, 3000, "4Ψ + 12Ψ/N");
  check("zero2", "", "fp16", 2000, 500, 3000, "2Ψ + 14Ψ/N");
  check("zero3", "", "bf16", 500, 500, 3000, "16Ψ/N");
  // Totals as the section states them.
  CHECK(expected_model_state_bytes(StrategyName::Zero1, SH(""), P("fp32"), 1000, 4).total() == 8 * 1000 + 8 * 1000 / 4);
  CHECK(expected_model_state_bytes(StrategyName::Zero2, SH(""), P("bf16"), 1000, 4).total() ==
        2 * 1000 + 14 * 1000 / 4);
  CHECK(expected_model_state_bytes(StrategyName::Zero3, SH(""), P("fp32"), 1000, 1).total() == 16000);
  CHECK_THROWS_AS(expected_model_state_bytes(StrategyName::Ddp, SH(""), P("fp32"), 1, 0), mtrain::Error);
}

TEST_CASE("HYBRID_SHARD's formula uses N = the shard group (ranks per node), not the world", "[model_state]") {
  CHECK(model_state_group_size(StrategyName::Fsdp, SH("HYBRID_SHARD"), 4, 2) == 2);
  CHECK(model_state_group_size(StrategyName::Fsdp, SH("HYBRID_SHARD"), 4, 0) == 4);  // no group given: the world
  CHECK(model_state_group_size(StrategyName::Fsdp, SH("FULL_SHARD"), 4, 2) == 4);
  CHECK(model_state_group_size(StrategyName::Zero3, SH("HYBRID_SHARD"), 4, 2) == 4);  // fsdp.* applies to fsdp only
  CHECK(model_state_group_size(StrategyName::Ddp, SH(""), 1, 0) == 1);
}
