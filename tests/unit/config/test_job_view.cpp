// The launcher's and the estimate's typed view of a job (lib/config/job_view.hpp): every bound key
// is a registry setting the worker's spec carries, a default job's view is the struct's defaults,
// and each keyword value arrives typed.
#include <catch2/catch.hpp>

#include <set>

#include "lib/config/job_view.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::config;

namespace {

// The worker's spec of a job resolved from the defaults and `values` (as a job file gives them).
json spec_with(std::map<std::string, json> values = {}) {
  const auto& reg = job_registry();
  return job_spec(reg, resolve(reg, {Layer{Source::JobFile, "job.yaml", std::move(values)}}).job);
}

}  // namespace

TEST_CASE("job view: each bound key is a setting of the worker's spec, bound once", "[config][job_view]") {
  std::set<std::string> seen;
  for (const auto& b : job_view_bindings()) {
    INFO(b.key);
    const Setting* s = job_registry().find(b.key);
    REQUIRE(s);
    CHECK(s->scope == Scope::Job);  // in the spec the launcher writes and hands to agents
    CHECK(seen.insert(b.key).second);
  }
}

TEST_CASE("job view: a default job's view is the struct's defaults", "[config][job_view]") {
  const JobView d;
  const JobView v = job_view(spec_with());
  CHECK(v.model.name == d.model.name);
  CHECK(v.model.path == d.model.path);
  CHECK(v.model.eval_path == d.model.eval_path);
  CHECK(v.model.trust_code == d.model.trust_code);
  CHECK(v.model.init == d.model.init);
  CHECK(v.model.init_strict == d.model.init_strict);
  CHECK(v.model.n_layer == d.model.n_layer);
  CHECK(v.model.n_head == d.model.n_head);
  CHECK(v.model.n_embd == d.model.n_embd);
  CHECK(v.model.block_size == d.model.block_size);
  CHECK(v.model.vocab_size == d.model.vocab_size);
  CHECK(v.model.hidden == d.model.hidden);
  CHECK(v.model.depth == d.model.depth);
  CHECK(v.model.input_dim == d.model.input_dim);
  CHECK(v.model.num_classes == d.model.num_classes);
  CHECK(v.strategy.name == d.strategy.name);
  CHECK(v.strategy.ddp_bucket_cap_mb == d.strategy.ddp_bucket_cap_mb);
  CHECK(v.strategy.zero_reduce_bucket_size == d.strategy.zero_reduce_bucket_size);
  CHECK(v.strategy.zero_overlap_comm == d.strategy.zero_overlap_comm);
  CHECK(v.strategy.zero_persistence_threshold == d.strategy.zero_persistence_threshold);
  CHECK(v.strategy.zero_max_live_parameters == d.strategy.zero_max_live_parameters);
  CHECK(v.strategy.zero_offload_optimizer == d.strategy.zero_offload_optimizer);
  CHECK(v.strategy.zero_offload_param == d.strategy.zero_offload_param);
  CHECK(v.strategy.fsdp_sharding == d.strategy.fsdp_sharding);
  CHECK(v.strategy.fsdp_cpu_offload == d.strategy.fsdp_cpu_offload);
  CHECK(v.strategy.fsdp_activation_checkpointing == d.strategy.fsdp_activation_checkpointing);
  CHECK(v.precision == d.precision);
  CHECK(v.batch_size == d.batch_size);
  CHECK(v.cpu_memory_pool == d.cpu_memory_pool);
  CHECK(v.work_dir == d.work_dir);
  CHECK(v.resume == d.resume);
  CHECK(v.checkpoint_overwrite == d.checkpoint_overwrite);
}

TEST_CASE("job view: keyword values arrive typed", "[config][job_view]") {
  const JobView v = job_view(spec_with({{"model.name", "torchscript"},
                                        {"model.path", "m.pt"},
                                        {"strategy", "auto"},
                                        {"zero.reduce_bucket_size", "auto"},
                                        {"zero.overlap_comm", "auto"},
                                        {"fsdp.sharding_strategy", "HYBRID_SHARD"},
                                        {"zero.offload_optimizer_device", "cpu"},
                                        {"train.precision", "bf16"},
                                        {"train.batch_size", 3},
                                        {"checkpoint.resume", "auto"}}));
  CHECK(v.model.name == ModelName::Torchscript);
  CHECK(v.model.path == "m.pt");
  CHECK_FALSE(v.strategy.name);  // auto: the launcher picks
  CHECK_FALSE(v.strategy.zero_reduce_bucket_size);
  CHECK_FALSE(v.strategy.zero_overlap_comm);
  CHECK(v.strategy.fsdp_sharding == ShardingStrategy::HybridShard);
  CHECK(v.strategy.zero_offload_optimizer == OffloadDevice::Cpu);
  CHECK(v.precision == Precision::Bf16);
  CHECK(v.batch_size == 3);
  CHECK(v.resume == Resume::automatic());
  const JobView w = job_view(spec_with({{"strategy", "zero3"},
                                        {"zero.reduce_bucket_size", 1000},
                                        {"zero.overlap_comm", true},
                                        {"checkpoint.resume", "runs/w/checkpoints/step_10"}}));
  CHECK(w.strategy.name == StrategyName::Zero3);
  CHECK(w.strategy.zero_reduce_bucket_size == 1000);
  CHECK(w.strategy.zero_overlap_comm == true);
  CHECK(w.resume == Resume::at("runs/w/checkpoints/step_10"));
}

TEST_CASE("job view: a value the registry did not check names its key", "[config][job_view]") {
  json job = spec_with();
  set(job, "train.batch_size", "sixteen");
  try {
    (void)job_view(job);
    FAIL("a text batch size was read");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.message(), Catch::Contains("train.batch_size"));
    CHECK(e.exit_code() == mtrain::kExitFailure);  // a job that bypassed the registry: a bug, not input
  }
}
