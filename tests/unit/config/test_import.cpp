// The seeds' DeepSpeed JSON and accelerate YAML (tests/data/config/seeds) import to the expected
// jobs; nothing is dropped without a warning.
#include <algorithm>

#include <catch2/catch.hpp>

#include "lib/config/import.hpp"
#include "lib/config/validate.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::config;

namespace {
std::string seed(const std::string& name) { return std::string(MTRAIN_SOURCE_DIR) + "/tests/data/config/seeds/" + name; }

bool warned(const ImportResult& r, const std::string& path) {
  return std::any_of(r.warnings.begin(), r.warnings.end(), [&](const std::string& w) { return w.rfind(path + ":", 0) == 0; });
}

void check_valid(const ImportResult& r) {
  ValidateReport rep = validate_text(job_registry(), import_yaml(job_registry(), r), "imported.yaml");
  INFO(format_report(rep));
  CHECK(rep.ok());
  // The written job reads back to exactly the imported values.
  CHECK(parse_yaml_layer(job_registry(), import_yaml(job_registry(), r), "imported.yaml", Source::JobFile).layer.values == r.values);
}
}  // namespace

TEST_CASE("seed 001 ds_config.json (HF Trainer, auto values) imports", "[config][import]") {
  ImportResult r = import_file(job_registry(), seed("ds_zero3_hf.json"));
  CHECK(r.format == ImportFormat::DeepSpeed);
  const std::map<std::string, json> expected = {
      {"strategy", "zero3"},
      {"zero.stage", 3},
      {"zero.offload_optimizer_device", "none"},
      {"zero.offload_param_device", "none"},
      {"zero.overlap_comm", true},
      {"zero.contiguous_gradients", true},
      {"zero.reduce_bucket_size", "auto"},
      {"zero.stage3_prefetch_bucket_size", "auto"},
      {"zero.stage3_param_persistence_threshold", "auto"},
      {"zero.stage3_max_live_parameters", 1000000000},
      {"zero.stage3_max_reuse_distance", 1000000000},
      {"zero.stage3_gather_16bit_weights_on_model_save", true},
      {"train.log_interval", 100},
      {"train.batch_size", 2},
  };
  // fp16.enabled "auto" keeps fp32, so the loss scaling is not imported (it would warn on every
  // later command that it applies to fp16 only); one warning names it.
  CHECK(r.values == expected);
  for (const char* w : {"fp16.enabled", "gradient_accumulation_steps", "gradient_clipping", "train_batch_size",
                        "wall_clock_breakdown", "zero_optimization.sub_group_size",
                        "zero_optimization.offload_optimizer.pin_memory", "zero_optimization.offload_param.pin_memory"})
    CHECK(warned(r, w));
  CHECK(r.warnings.size() == 8);
  check_valid(r);
}

TEST_CASE("seed 002 DeepSpeed config with // comments, optimizer and WarmupLR imports", "[config][import]") {
  ImportResult r = import_file(job_registry(), seed("ds_zero3_resnet.json"));
  const std::map<std::string, json> expected = {
      {"strategy", "zero3"},
      {"zero.stage", 3},
      {"zero.offload_optimizer_device", "cpu"},
      {"zero.overlap_comm", true},
      {"zero.contiguous_gradients", true},
      {"zero.reduce_bucket_size", "auto"},
      {"zero.stage3_prefetch_bucket_size", "auto"},
      {"zero.stage3_param_persistence_threshold", "auto"},
      {"zero.stage3_max_live_parameters", 1000000000},
      {"zero.stage3_max_reuse_distance", 1000000000},
      {"zero.stage3_gather_16bit_weights_on_model_save", true},
      {"train.precision", "fp16"},
      {"precision.loss_scale", 0.0},
      {"precision.loss_scale_window", 1000},
      {"precision.initial_scale_power", 16},
      {"precision.hysteresis", 2},
      {"precision.min_loss_scale", 1.0},
      {"optim.name", "adamw"},
      {"optim.lr", 0.0001},
      {"optim.weight_decay", 0.01},
      {"sched.name", "constant"},
      {"sched.warmup_steps", 500},
  };
  CHECK(r.values == expected);
  CHECK(r.warnings.size() == 2);
  CHECK(warned(r, "scheduler.params.warmup_type"));
  CHECK(warned(r, "zero_optimization.sub_group_size"));
  check_valid(r);
}

TEST_CASE("seed 000 MMEngine DeepSpeedStrategy arguments import", "[config][import]") {
  ImportResult r = import_file(job_registry(), seed("ds_mmengine_strategy.json"));
  CHECK(r.values.at("strategy") == "zero3");
  CHECK(r.values.at("train.precision") == "fp16");
  CHECK(r.values.at("precision.initial_scale_power") == 15);
  CHECK(r.values.at("precision.loss_scale_window") == 500);
  CHECK(r.values.at("zero.allgather_bucket_size") == 50000000);
  CHECK(r.values.at("zero.reduce_bucket_size") == 50000000);
  CHECK(r.values.at("zero.offload_optimizer_device") == "none");  // cpu_offload: false
  for (const char* w : {"fp16.fp16_master_weights_and_grads", "inputs_to_half", "zero_optimization.allgather_partitions",
                        "zero_optimization.reduce_scatter"})
    CHECK(warned(r, w));
  CHECK(r.warnings.size() == 4);
  check_valid(r);
}

TEST_CASE("seed 001 accelerate config.yaml (DEEPSPEED, 8 processes) imports", "[config][import]") {
  ImportResult r = import_file(job_registry(), seed("accelerate_deepspeed.yaml"));
  CHECK(r.format == ImportFormat::Accelerate);
  const std::map<std::string, json> expected = {
      {"strategy", "zero3"},
      {"zero.stage", 3},
      {"zero.offload_optimizer_device", "cpu"},
      {"zero.offload_param_device", "cpu"},
      {"zero.stage3_gather_16bit_weights_on_model_save", true},
      {"train.grad_accum", 1},
      {"optim.grad_clip", 1.0},
      {"train.precision", "fp32"},
      {"launch.nnodes", "1"},
      {"launch.nproc_per_node", "8"},
      {"launch.rdzv_backend", "static"},
  };
  CHECK(r.values == expected);
  for (const char* w : {"debug", "deepspeed_config.zero3_init_flag", "downcast_bf16", "enable_cpu_affinity", "machine_rank",
                        "main_training_function", "same_network", "tpu_env", "tpu_use_cluster", "tpu_use_sudo"})
    CHECK(warned(r, w));
  CHECK(r.warnings.size() == 10);
  check_valid(r);
}

TEST_CASE("accelerate's own JSON (accelerate config default) is an accelerate config", "[config][import]") {
  const std::string text =
      "{\n  \"compute_environment\": \"LOCAL_MACHINE\",\n  \"distributed_type\": \"NO\",\n"
      "  \"mixed_precision\": \"bf16\",\n  \"num_machines\": 1,\n  \"num_processes\": 1,\n  \"use_cpu\": true\n}\n";
  ImportResult r = import_text(job_registry(), text, "default_config.yaml");
  CHECK(r.values.at("train.precision") == "bf16");
  CHECK(detect_foreign(text) == ImportFormat::Accelerate);
}

TEST_CASE("accelerate FSDP and multi-machine configs", "[config][import]") {
  const std::string yaml =
      "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: 2\n  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n"
      "  fsdp_min_num_params: 10000000\n  fsdp_offload_params: true\n  fsdp_backward_prefetch: NO_PREFETCH\n"
      "  fsdp_state_dict_type: SHARDED_STATE_DICT\nmixed_precision: bf16\nnum_machines: 2\nnum_processes: 16\n"
      "main_process_ip: 10.0.0.1\nmain_process_port: 29555\ngpu_ids: all\n";
  ImportResult r = import_text(job_registry(), yaml, "acc.yaml");
  CHECK(r.values.at("strategy") == "fsdp");
  CHECK(r.values.at("fsdp.sharding_strategy") == "SHARD_GRAD_OP");
  CHECK(r.values.at("fsdp.wrap_policy") == "size");
  CHECK(r.values.at("fsdp.min_num_params") == 10000000);
  CHECK(r.values.at("fsdp.cpu_offload") == true);
  CHECK(r.values.at("fsdp.backward_prefetch") == "NONE");
  CHECK(r.values.at("train.precision") == "bf16");
  CHECK(r.values.at("launch.nnodes") == "2");  // N or MIN:MAX, text
  CHECK(r.values.at("launch.nproc_per_node") == "8");
  CHECK(r.values.at("launch.master_addr") == "10.0.0.1");
  CHECK(r.values.at("launch.master_port") == 29555);
  // "all" is accelerate's "no restriction": mtrain's default, so a GPU-less host runs CPU ranks
  // as accelerate does instead of refusing "--gpus all" (found by the peers tests).
  CHECK(r.values.count("launch.gpus") == 0);
  CHECK(warned(r, "fsdp_config.fsdp_state_dict_type"));
  CHECK(import_text(job_registry(), "distributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: 0,2\n", "a.yaml")
            .values.at("launch.gpus") == "0,2");
  check_valid(r);
}

TEST_CASE("import refuses contradictions and unknown formats", "[config][import]") {
  const auto& reg = job_registry();
  CHECK_THROWS_WITH(import_text(reg, R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})", "ds.json"),
                    Catch::Contains("both true"));
  CHECK_THROWS_WITH(import_text(reg, R"({"zero_optimization": {"stage": 4}})", "ds.json"),
                    Catch::Contains("zero_optimization.stage") && Catch::Contains("above the maximum 3"));
  CHECK_THROWS_WITH(import_text(reg, "{\n  \"train_batch_size\": 8,\n}\n", "ds.json"), Catch::Contains("ds.json:3:"));
  CHECK_THROWS_WITH(import_text(reg, "strategy: zero2\n", "job.yaml"), Catch::Contains("already is an mtrain job"));
  CHECK_THROWS_WITH(import_text(reg, "hello: world\n", "x.yaml"), Catch::Contains("neither a DeepSpeed config"));
  ImportResult sched = import_text(
      reg, R"({"optimizer": {"type": "AdamW", "params": {"lr": 0.001, "betas": [0.8, 0.99]}},
               "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 1000, "warmup_num_steps": 100}}})",
      "ds.json");
  CHECK(sched.values.at("sched.name") == "linear");
  CHECK(sched.values.at("sched.total_iters") == 900);
  CHECK(sched.values.at("sched.end_factor") == 0.0);
  CHECK(sched.values.at("optim.beta1") == Approx(0.8));
  CHECK(sched.values.at("optim.beta2") == Approx(0.99));
}

TEST_CASE("DeepSpeed's tensorboard block imports as log.tensorboard, with no warning (issue 42)", "[config][import]") {
  const auto& reg = job_registry();
  ImportResult r = import_text(reg, R"({"train_micro_batch_size_per_gpu": 4,
      "tensorboard": {"enabled": true, "output_path": "logs/", "job_name": "run1"},
      "wandb": {"enabled": true, "project": "p"}, "csv_monitor": {"enabled": true}, "comet": {"enabled": true}})",
                               "ds.json");
  CHECK(r.values.at("log.tensorboard") == "logs/run1");  // DeepSpeed's output_path/job_name
  CHECK_FALSE(warned(r, "tensorboard"));
  CHECK_FALSE(warned(r, "tensorboard.output_path"));
  // The monitors mtrain does not write stay warned, saying what to use instead.
  for (const char* k : {"wandb", "csv_monitor", "comet"}) {
    INFO(k);
    CHECK(warned(r, k));
  }
  CHECK(std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
    return w.rfind("wandb:", 0) == 0 && w.find("log.mlflow.uri") != std::string::npos;
  }));
  check_valid(r);
  // Disabled: nothing to import and nothing to warn about; DeepSpeed's default job name.
  CHECK(import_text(reg, R"({"tensorboard": {"enabled": false, "output_path": "x"}})", "d.json").values.count("log.tensorboard") == 0);
  CHECK(import_text(reg, R"({"tensorboard": {"enabled": true, "output_path": "tb"}})", "d.json").values.at("log.tensorboard") ==
        "tb/DeepSpeedJobName");
  ImportResult no_path = import_text(reg, R"({"tensorboard": {"enabled": true}})", "d.json");
  CHECK(no_path.values.at("log.tensorboard") == "tensorboard/DeepSpeedJobName");
  CHECK(warned(no_path, "tensorboard.output_path"));
}

TEST_CASE("accelerate's log_with imports its TensorBoard folder, mlflow says what to set", "[config][import]") {
  const auto& reg = job_registry();
  ImportResult r = import_text(reg, "distributed_type: MULTI_GPU\nnum_processes: 2\nlog_with: tensorboard\n"
                                    "project_dir: out\nlogging_dir: out/logs\n", "acc.yaml");
  CHECK(r.values.at("log.tensorboard") == "out/logs");
  CHECK_FALSE(warned(r, "log_with"));
  CHECK_FALSE(warned(r, "project_dir"));
  CHECK_FALSE(warned(r, "logging_dir"));
  check_valid(r);
  ImportResult p = import_text(reg, "distributed_type: MULTI_GPU\nlog_with: [tensorboard, mlflow, wandb]\nproject_dir: out\n", "a.yaml");
  CHECK(p.values.at("log.tensorboard") == "out");  // logging_dir defaults to project_dir
  CHECK(std::count_if(p.warnings.begin(), p.warnings.end(), [](const std::string& w) {
          return w.rfind("log_with:", 0) == 0;
        }) == 2);  // mlflow (set log.mlflow.uri) and wandb
  CHECK(std::any_of(p.warnings.begin(), p.warnings.end(),
                    [](const std::string& w) { return w.find("set log.mlflow.uri") != std::string::npos; }));
  ImportResult none = import_text(reg, "distributed_type: MULTI_GPU\nlog_with: tensorboard\n", "a.yaml");
  CHECK(none.values.count("log.tensorboard") == 0);
  CHECK(warned(none, "log_with"));
}
