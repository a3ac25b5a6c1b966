// The estimate's probe (lib/trainer/estimate/probe.cpp): its passes allocate as the run's steps
// do. On glibc's allocator a traced GPT-2's pass peaked ~100 MiB above the same pass on the block
// pool the run uses (train.cpu_memory_pool), and every strategy's estimate was 7-11% high
// (issue 44 item 5).
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "lib/config/registry.hpp"
#include "lib/trainer/comm/pooled_cpu.hpp"
#include "lib/trainer/estimate/probe.hpp"
#include "temp_dir.hpp"

using mtrain::trainer::EstimateProbeOptions;
using mtrain::trainer::pooled_cpu_allocator_installed;
using mtrain::trainer::run_estimate_probe;

namespace {

nlohmann::json probe_mlp(const mtrain::testing::TempDir& dir, bool pool) {
  auto job = mtrain::config::job_registry().defaults();
  mtrain::config::set(job, "model.name", "mlp");
  mtrain::config::set(job, "model.hidden", 32);
  mtrain::config::set(job, "model.depth", 2);
  mtrain::config::set(job, "train.threads", 1);
  mtrain::config::set(job, "train.cpu_memory_pool", pool);
  const auto path = dir.path / (pool ? "pool.json" : "system.json");
  std::ofstream(path) << job.dump();
  EstimateProbeOptions o;
  o.job_path = path.string();
  o.batches = {1, 2};
  return run_estimate_probe(o);
}

}  // namespace

// One case: the pool, once installed, serves the whole process, so the order matters.
TEST_CASE("the probe measures on the allocator the job's run uses", "[estimate][probe]") {
  mtrain::testing::TempDir dir;
  REQUIRE_FALSE(pooled_cpu_allocator_installed());
  const auto system = probe_mlp(dir, false);
  CHECK(system.at("allocator") == "system");
  CHECK_FALSE(pooled_cpu_allocator_installed());
  CHECK(system.at("points").size() == 2);

  const auto pooled = probe_mlp(dir, true);
  CHECK(pooled.at("allocator") == "block pool");
  CHECK(pooled_cpu_allocator_installed());
  REQUIRE(pooled.at("points").size() == 2);
  for (const auto& p : pooled.at("points")) CHECK(p.at("peak_above_bytes").get<int64_t>() >= 0);
}
