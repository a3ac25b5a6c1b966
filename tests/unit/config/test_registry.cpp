#include <set>

#include <catch2/catch.hpp>

#include "lib/config/registry.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::config;

TEST_CASE("defaults hold every setting, nested by dotted key", "[config]") {
  const auto& reg = job_registry();
  json d = reg.defaults();
  for (const auto& s : reg.all()) CHECK(get(d, s.key) == s.default_value);
  CHECK(d["train"]["max_steps"] == 200);
  CHECK(d["strategy"] == "ddp");
}

TEST_CASE("text values are parsed by type and range-checked", "[config]") {
  const auto& reg = job_registry();
  CHECK(reg.parse_text(reg.require("train.max_steps"), "12") == 12);
  CHECK(reg.parse_text(reg.require("optim.lr"), "3e-4") == Approx(3e-4));
  CHECK(reg.parse_text(reg.require("data.shuffle"), "false") == false);
  CHECK_THROWS_WITH(reg.parse_text(reg.require("train.batch_size"), "0"),
                    Catch::Contains("below the minimum"));
  CHECK_THROWS_WITH(reg.parse_text(reg.require("strategy"), "zero4"),
                    Catch::Contains("one of ddp, zero1") && Catch::Contains("did you mean"));
  CHECK_THROWS_WITH(reg.parse_text(reg.require("train.max_steps"), "10x"), Catch::Contains("'10x'"));
}

TEST_CASE("a value that is not UTF-8 is refused with the setting named, from any source", "[config]") {
  // Found by fuzz.replay.slurm_job_file: a Latin-1 byte in a slurm: value reached a JSON dump.
  const auto& reg = mtrain::config::job_registry();
  for (const char* key : {"slurm.job_name", "slurm.setup", "launch.hostfile", "model.path"}) {
    try {
      reg.parse_text(reg.require(key), "run\xb2");
      FAIL("accepted a value that is not UTF-8 for " << key);
    } catch (const mtrain::Error& e) {
      CHECK(std::string(e.what()).find("not valid UTF-8") != std::string::npos);
      CHECK(std::string(e.what()).find(key) != std::string::npos);
    }
  }
}

TEST_CASE("unknown keys name the closest valid key", "[config]") {
  const auto& reg = job_registry();
  CHECK_THROWS_WITH(reg.require("optim.lrr"), Catch::Contains("Did you mean 'optim.lr'"));
  json job = {{"optim", {{"lrr", 0.1}}}};
  CHECK_THROWS_WITH(load_job(reg, job, "job.json"),
                    Catch::Contains("job.json") && Catch::Contains("optim.lr"));
}

TEST_CASE("layers apply in order and record provenance", "[config]") {
  const auto& reg = job_registry();
  Layer file{Source::JobFile, "job.yaml", {{"train.max_steps", 50}, {"optim.lr", 0.1}}};
  Layer cli{Source::Cli, "command line", {{"train.max_steps", 7}}};
  auto r = resolve(reg, {file, cli});
  CHECK(get(r.job, "train.max_steps") == 7);
  CHECK(get(r.job, "optim.lr") == Approx(0.1));
  CHECK(r.provenance["train.max_steps"].first == Source::Cli);
  CHECK(r.provenance["optim.lr"].second == "job.yaml");
  CHECK(r.provenance["strategy"].first == Source::Default);
}

TEST_CASE("flags derive their environment variable", "[config]") {
  const auto& reg = job_registry();
  CHECK(reg.find_flag("max-steps")->env == "MTRAIN_MAX_STEPS");
  CHECK(reg.find_flag("strategy")->key == "strategy");
}

TEST_CASE("every setting has a unique environment variable and flag", "[config]") {
  const auto& reg = job_registry();
  std::set<std::string> envs, flags;
  for (const auto& s : reg.all()) {
    INFO(s.key);
    CHECK(!s.env.empty());
    CHECK(envs.insert(s.env).second);
    if (!s.flag.empty()) CHECK(flags.insert(s.flag).second);
    CHECK(!s.help.empty());
    CHECK_NOTHROW(reg.check_value(s, s.default_value));
  }
  // Names the launcher sets in every rank's environment must never read as settings; the one
  // exception is launch.job_id, read by `mtrain launch` alone (never handed to ranks), whose
  // --job-id has always taken MTRAIN_JOB_ID.
  for (const char* reserved : {"MTRAIN_HOST", "MTRAIN_GPU"}) CHECK(envs.count(reserved) == 0);
  for (const auto& s : reg.all())
    if (s.env == "MTRAIN_JOB_ID") CHECK(s.key == "launch.job_id");
  CHECK(reg.require("train.log_interval").env == "MTRAIN_TRAIN_LOG_INTERVAL");
}

TEST_CASE("scope follows the key and job_spec keeps only worker settings", "[config]") {
  const auto& reg = job_registry();
  CHECK(reg.require("launch.nproc_per_node").scope == Scope::Launch);
  CHECK(reg.require("slurm.partition").scope == Scope::Slurm);
  CHECK(reg.require("zero.stage").scope == Scope::Job);
  json spec = job_spec(reg, reg.defaults());
  CHECK(spec.contains("train"));
  CHECK(spec.contains("zero"));
  CHECK_FALSE(spec.contains("launch"));
  CHECK_FALSE(spec.contains("slurm"));
  CHECK(load_job(reg, spec, "spec.json") == reg.defaults());
}

TEST_CASE("issue 6 keys exist with their allowed values", "[config]") {
  const auto& reg = job_registry();
  for (const char* k : {"launch.nproc_per_node", "launch.nnodes", "launch.gpus", "launch.include", "launch.exclude",
                        "launch.hostfile", "launch.master_addr", "launch.master_port", "launch.max_restarts",
                        "launch.log_dir", "slurm.partition", "slurm.nodes", "slurm.gpus_per_node", "slurm.time",
                        "slurm.account", "zero.stage", "zero.allgather_bucket_size", "zero.reduce_bucket_size",
                        "zero.overlap_comm", "zero.contiguous_gradients", "zero.stage3_prefetch_bucket_size",
                        "zero.stage3_param_persistence_threshold", "zero.stage3_max_live_parameters",
                        "zero.stage3_max_reuse_distance", "zero.offload_optimizer_device", "zero.offload_param_device",
                        "zero.stage3_gather_16bit_weights_on_model_save", "fsdp.sharding_strategy",
                        "fsdp.min_num_params", "fsdp.wrap_policy", "fsdp.forward_prefetch", "fsdp.backward_prefetch",
                        "fsdp.limit_all_gathers", "fsdp.cpu_offload", "fsdp.activation_checkpointing",
                        "precision.loss_scale", "precision.initial_scale_power", "precision.loss_scale_window",
                        "precision.hysteresis", "precision.min_loss_scale", "train.global_batch_size"})
    CHECK(reg.find(k) != nullptr);
  const auto& nproc = reg.require("launch.nproc_per_node");
  for (const char* ok : {"4", "auto", "cpu", "gpu"}) CHECK(reg.parse_text(nproc, ok) == ok);
  CHECK_THROWS_WITH(reg.parse_text(nproc, "0"), Catch::Contains("at least one"));
  CHECK_THROWS_WITH(reg.parse_text(nproc, "many"), Catch::Contains("a count, auto, cpu or gpu"));
  CHECK(reg.parse_text(reg.require("zero.reduce_bucket_size"), "auto") == "auto");
  CHECK(reg.parse_text(reg.require("zero.overlap_comm"), "auto") == "auto");
  CHECK(reg.parse_text(reg.require("zero.overlap_comm"), "true") == true);
  CHECK(reg.require("zero.overlap_comm").default_value == "auto");
  CHECK_THROWS(reg.parse_text(reg.require("zero.allgather_bucket_size"), "auto"));
  CHECK_THROWS_WITH(reg.parse_text(reg.require("fsdp.sharding_strategy"), "FULL_SHARDD"),
                    Catch::Contains("did you mean 'FULL_SHARD'"));
  CHECK(reg.parse_text(reg.require("slurm.time"), "1-02:30:00") == "1-02:30:00");
  CHECK_THROWS(reg.parse_text(reg.require("slurm.time"), "two hours"));
  CHECK(reg.parse_text(reg.require("launch.gpus"), "0-3,5") == "0-3,5");
  CHECK_THROWS_WITH(reg.parse_text(reg.require("launch.gpus"), "3-1"), Catch::Contains("backwards"));
}

TEST_CASE("launcher settings keep their flag out of the trainer-flag loop", "[config]") {
  const auto& reg = job_registry();
  const Setting& nproc = reg.require("launch.nproc_per_node");
  CHECK(nproc.flag.empty());  // `mtrain launch` defines --nproc-per-node itself
  CHECK(nproc.launcher_flag == "nproc-per-node");
  CHECK(cli_flag(nproc) == "nproc-per-node");
  CHECK(nproc.env == "MTRAIN_NPROC_PER_NODE");
  CHECK(reg.find_flag("nproc-per-node") == &nproc);
  for (const auto& s : reg.all())
    if (s.scope != Scope::Job) CHECK(s.flag.empty());
}

TEST_CASE("fsdp.wrap_module_types takes a YAML list, bracketed text or comma text", "[config]") {
  const auto& reg = job_registry();
  const Setting& s = reg.require("fsdp.wrap_module_types");
  // A list setting like slurm.setup (one mechanism), whose text separates items with ','.
  CHECK(s.list);
  const json both = json::array({"Block", "Linear"});
  CHECK(reg.parse_text(s, "Block,Linear") == both);
  CHECK(reg.parse_text(s, " Block , Linear ") == both);
  CHECK(reg.parse_text(s, "[Block, Linear]") == both);
  CHECK(reg.parse_text(s, "") == json::array());
  CHECK(reg.check_value(s, json::array({"Block", "blocks.0"})) == json::array({"Block", "blocks.0"}));
  CHECK(reg.check_value(s, "Block") == json::array({"Block"}));
  CHECK_THROWS_WITH(reg.check_value(s, json::array({json::array({"Block"})})), Catch::Contains("items must be plain values"));
  // slurm.setup keeps one item per line: its lines hold commas.
  CHECK(reg.parse_text(reg.require("slurm.setup"), "a, b\nc") == json::array({"a, b", "c"}));
  CHECK_THAT(describe_type(s), Catch::Contains("[Block, Linear]"));
}

// Issue 40 item 12: --device-memory 0 passed the check and then read as "detect it".
TEST_CASE("a device memory of 0 is refused, not read as auto", "[config]") {
  const auto& reg = job_registry();
  for (const char* zero : {"0", "0GiB", "0.0 MB", "00"})
    CHECK_THROWS_WITH(reg.parse_text(reg.require("launch.device_memory"), zero),
                      Catch::Contains("0 bytes") && Catch::Contains("leave it out"));
  CHECK(reg.parse_text(reg.require("launch.device_memory"), "80GiB") == "80GiB");
  CHECK(reg.parse_text(reg.require("launch.device_memory"), "0.5GiB") == "0.5GiB");
  CHECK(reg.parse_text(reg.require("launch.device_memory"), "") == "");
}
