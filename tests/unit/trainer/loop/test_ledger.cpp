// The memory ledger: the printed table beside §6's formula (config/model_state.hpp, tested in
// tests/unit/config/test_model_state.cpp), and summary.json's measured-vs-formula keys.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "lib/core/error.hpp"
#include "lib/trainer/loop/ledger.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;

namespace {
using mtrain::config::choice_from_text;
using mtrain::config::OffloadDevice;
using mtrain::config::Precision;
using mtrain::config::ShardingStrategy;
mtrain::config::StrategyName S(const std::string& name) { return mtrain::config::strategy_from_text(name); }
// The tables below spell the settings as a job does ("" for fsdp.* under another strategy).
ShardingStrategy SH(const std::string& name) {
  return name.empty() ? ShardingStrategy::FullShard : choice_from_text<ShardingStrategy>(name, "fsdp.sharding_strategy");
}
Precision P(const std::string& name) { return choice_from_text<Precision>(name, "train.precision"); }
OffloadDevice O(const std::string& name) { return choice_from_text<OffloadDevice>(name, "zero.offload_param_device"); }

}  // namespace

TEST_CASE("the ledger table prints measured bytes beside §6's formula", "[ledger]") {
  LedgerReport r;
  r.strategy = S("zero2");
  r.precision = Precision::Fp32;
  r.psi = 1000;
  r.world = 4;
  r.params = 4000;
  r.grads = 1000;
  r.optimizer = 2100;
  const std::string t = format_ledger_table(r, expected_model_state_bytes(S("zero2"), SH(""), P("fp32"), 1000, 4));
  CHECK_THAT(t, Catch::Contains("Ψ = 1000") && Catch::Contains("N = 4") &&
                    Catch::Contains("4Ψ + 12Ψ/N = 7000 bytes") && Catch::Contains("1.050"));
}

TEST_CASE("HYBRID_SHARD's ledger uses N = the shard group (ranks per node), not the world",
          "[ledger]") {
  CHECK(mtrain::config::model_state_group_size(S("fsdp"), SH("HYBRID_SHARD"), 4, 2) == 2);
  CHECK(mtrain::config::model_state_group_size(S("fsdp"), SH("HYBRID_SHARD"), 4, 0) == 4);  // no group given: the world
  CHECK(mtrain::config::model_state_group_size(S("fsdp"), SH("FULL_SHARD"), 4, 2) == 4);
  CHECK(mtrain::config::model_state_group_size(S("zero3"), SH("HYBRID_SHARD"), 4, 2) ==
        4);  // fsdp.* applies to fsdp only
  CHECK(mtrain::config::model_state_group_size(S("ddp"), SH(""), 1, 0) == 1);

  LedgerReport r;
  r.strategy = S("fsdp");
  r.sharding_strategy = ShardingStrategy::HybridShard;
  r.precision = Precision::Fp32;
  r.psi = 1000;
  r.world = 2;
  r.world_size = 4;
  r.params = 2000;
  r.grads = 2000;
  r.optimizer = 4000;
  const auto e = expected_model_state_bytes(S("fsdp"), SH("HYBRID_SHARD"), P("fp32"), 1000, r.world);
  const std::string t = format_ledger_table(r, e);
  CHECK_THAT(t, Catch::Contains("fsdp/HYBRID_SHARD") && Catch::Contains("Ψ = 1000") &&
                    Catch::Contains("N = 2 ranks per shard group of world 4") &&
                    Catch::Contains("16Ψ/N = 8000 bytes") && Catch::Contains("1.000"));

  // The loop: 4 thread ranks as 2 nodes of 2 (StrategyOptions::local_world_size, which the
  // worker takes from LOCAL_WORLD_SIZE). Each rank holds 16Ψ/2 bytes, and the ledger says so.
  at::set_num_threads(1);
  const auto d = fresh_dir("ledger_hybrid");
  auto j = small_job(d, "mlp");
  mtrain::config::set(j, "strategy", "fsdp");
  mtrain::config::set(j, "fsdp.sharding_strategy", "HYBRID_SHARD");
  mtrain::config::set(j, "train.max_steps", 2);
  mtrain::config::set(j, "checkpoint.interval", 0);
  std::ostringstream out0;
  run_ranks(4, [&](Communicator& comm) {
    std::ostringstream sink;
    auto parts = parts_for(j);
    TrainJob tj = train_job_from_json(j);
    tj.strat.local_world_size = 2;
    train(tj, comm, parts, comm.rank() == 0 ? out0 : sink);
  });
  const std::string console = out0.str();
  CHECK_THAT(console, Catch::Contains("Memory ledger (fsdp/HYBRID_SHARD, fp32") &&
                          Catch::Contains("N = 2 ranks per shard group of world 4") &&
                          Catch::Contains("16Ψ/N ="));
  const json s = read_json(d / "summary.json");
  const double psi = s["num_params"].get<double>();
  CHECK(s["model_state_formula_bytes"]["ledger_world"] == 2);
  CHECK(s["model_state_formula_bytes"]["total"].get<double>() == Approx(16 * psi / 2).margin(1));
  const auto& m = s["model_state_bytes_per_rank"];
  const double measured = m["params"].get<double>() + m["grads"].get<double>() + m["optimizer"].get<double>();
  CHECK(std::abs(measured - 16 * psi / 2) <= 0.05 * 16 * psi / 2);
  // The transient high-water marks FSDP reports.
  CHECK(s["memory"]["gathered_peak_bytes"].get<int64_t>() > 0);
  CHECK(s["memory"]["transient_peak_bytes"].get<int64_t>() >=
        s["memory"]["gathered_peak_bytes"].get<int64_t>());
}

TEST_CASE("the loop prints the ledger and writes measured and formula bytes", "[ledger]") {
  at::set_num_threads(1);
  const auto d = fresh_dir("ledger");
  auto j = small_job(d, "mlp");
  mtrain::config::set(j, "train.max_steps", 2);
  mtrain::config::set(j, "checkpoint.interval", 0);
  std::string console;
  run_job(j, 2, &console);
  CHECK_THAT(console, Catch::Contains("Memory ledger (ddp, fp32") && Catch::Contains("N = 2") &&
                          Catch::Contains("16Ψ ="));
  const json s = read_json(d / "summary.json");
  const double psi = s["num_params"].get<double>();
  CHECK(s["model_state_formula_bytes"]["total"].get<double>() == 16 * psi);
  CHECK(s["model_state_formula_bytes"]["formula"] == "16Ψ");
  CHECK(s["model_state_bytes_per_rank"]["params"].get<double>() ==
        s["model_state_formula_bytes"]["params"].get<double>());
  CHECK(s["peak_memory_bytes"].get<int64_t>() > 0);
}

TEST_CASE("the ledger says why params exceed the formula (ZeRO-3 persistence) and what offload does",
          "[ledger]") {
  LedgerReport r;
  r.strategy = S("zero3");
  r.precision = Precision::Fp32;
  r.psi = 1000;
  r.world = 2;
  r.params = 4000;  // one persistent unit: the whole model unsharded
  r.grads = 2000;
  r.optimizer = 4000;
  r.persistence_threshold = 100000;
  r.offload = offload_text(S("zero3"), O("cpu"), O("cpu"), false);
  r.on_cpu = true;
  const auto e = expected_model_state_bytes(S("zero3"), SH(""), P("fp32"), 1000, 2);
  const std::string t = format_ledger_table(r, e);
  CHECK_THAT(t, Catch::Contains("2.000"));
  CHECK_THAT(t, Catch::Contains("zero.stage3_param_persistence_threshold (100000) stay unsharded"));
  CHECK_THAT(t, Catch::Contains("offload: parameter shards, fp32 master and optimizer state in host memory") &&
                    Catch::Contains("offloading moves nothing"));
  r.params = 2000;  // everything sharded: no note
  r.offload = "";
  const std::string plain = format_ledger_table(r, e);
  CHECK_THAT(plain, !Catch::Contains("note:") && !Catch::Contains("offload:"));
  CHECK(offload_text(S("zero2"), O("cpu"), O("none"), false) == "fp32 master and optimizer state");
  CHECK(offload_text(S("zero2"), O("none"), O("cpu"), false).empty());  // params offload is stage 3 only
  CHECK(offload_text(S("fsdp"), O("none"), O("none"), true) == "parameter shards, fp32 master and optimizer state");
  CHECK(offload_text(S("ddp"), O("cpu"), O("cpu"), true).empty());
}
