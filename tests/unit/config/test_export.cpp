// import(export(job)) gives back every key the exporters map, for DeepSpeed and accelerate; the
// accelerate environment uses accelerate's names; unread settings are named.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "lib/config/config_commands.hpp"
#include "lib/config/export.hpp"
#include "lib/config/import.hpp"

using namespace mtrain::config;

namespace {

Resolved job_of(const std::map<std::string, json>& values) {
  return resolve(job_registry(), {Layer{Source::JobFile, "job.yaml", values}});
}

// What a key means once 'auto' and "0 follows strategy" are worked out, so that a job and its
// round trip compare by meaning.
json meaning(const json& job, const std::string& key) {
  const json& v = get(job, key);
  const std::string strategy = get(job, "strategy").get<std::string>();
  const long long stage = strategy.rfind("zero", 0) == 0 ? strategy.back() - '0' : 0;
  const long long embd = get(job, "model.n_embd").get<long long>();
  if (key == "zero.stage") return v.get<long long>() != 0 ? v.get<long long>() : stage;
  if (key == "launch.rdzv_backend" && v == "mtrain") return "c10d";
  if (!v.is_string() || v != "auto") return v;
  if (key == "zero.overlap_comm") return stage == 3;
  if (key == "zero.reduce_bucket_size") return embd * embd;
  if (key == "zero.stage3_prefetch_bucket_size") return embd * embd * 9 / 10;
  if (key == "zero.stage3_param_persistence_threshold") return 10 * embd;
  return v;
}

void check_round_trip(const json& job, const ImportResult& back, const std::set<std::string>& mapped) {
  const json again = resolve(job_registry(), {Layer{Source::JobFile, "back", back.values}}).job;
  CHECK(!mapped.empty());
  for (const auto& key : mapped) {
    INFO(key << ": " << get(job, key).dump() << " came back as " << get(again, key).dump());
    const json a = meaning(job, key), b = meaning(again, key);
    if (a.is_number_float() || b.is_number_float())
      CHECK(std::fabs(a.get<double>() - b.get<double>()) <= 1e-12 * std::max(1.0, std::fabs(a.get<double>())));
    else
      CHECK(a == b);
  }
}

const std::vector<std::map<std::string, json>> kJobs = {
    {{"strategy", "zero3"}, {"train.precision", "fp16"}, {"optim.name", "adamw"}, {"sched.name", "cosine"},
     {"zero.offload_optimizer_device", "cpu"}, {"zero.offload_param_device", "cpu"}, {"train.batch_size", 4},
     {"train.grad_accum", 2}, {"train.global_batch_size", 64}, {"optim.grad_clip", 1.5}, {"train.log_interval", 7},
     {"optim.lr", 3e-4}, {"optim.beta1", 0.8}, {"optim.beta2", 0.95}, {"optim.eps", 1e-6},
     {"optim.weight_decay", 0.01}, {"sched.min_lr", 3e-5}, {"sched.warmup_steps", 10},
     {"precision.loss_scale", 128.0}, {"precision.initial_scale_power", 12}, {"precision.loss_scale_window", 500},
     {"precision.hysteresis", 3}, {"precision.min_loss_scale", 0.5}, {"zero.allgather_bucket_size", 1000},
     {"zero.reduce_bucket_size", 2000}, {"zero.overlap_comm", false}, {"zero.contiguous_gradients", false},
     {"zero.stage3_prefetch_bucket_size", 3000}, {"zero.stage3_param_persistence_threshold", 40},
     {"zero.stage3_max_live_parameters", 5000}, {"zero.stage3_max_reuse_distance", 6000},
     {"zero.stage3_gather_16bit_weights_on_model_save", true}, {"launch.nnodes", 2}, {"launch.nproc_per_node", "4"},
     {"launch.master_addr", "10.0.0.1"}, {"launch.master_port", 1234}, {"launch.gpus", "0,1,2,3"},
     {"launch.hostfile", "hosts.txt"}, {"launch.include", "worker-0@worker-1"}},
    {{"strategy", "zero1"}, {"train.precision", "bf16"}, {"optim.name", "sgd"}, {"optim.momentum", 0.9},
     {"optim.nesterov", true}, {"optim.weight_decay", 0.1}, {"sched.name", "constant"}, {"sched.warmup_steps", 5},
     {"train.grad_accum", 3}, {"zero.offload_optimizer_device", "nvme"}},
    {{"strategy", "ddp"}, {"sched.name", "linear"}, {"sched.start_factor", 1.0}, {"sched.end_factor", 0.0},
     {"sched.total_iters", 100}, {"sched.warmup_steps", 3}, {"launch.device", "cpu"}, {"launch.nproc_per_node", "2"}},
    {{"strategy", "fsdp"}, {"train.precision", "fp16"}, {"fsdp.sharding_strategy", "SHARD_GRAD_OP"},
     {"fsdp.wrap_policy", "size"}, {"fsdp.min_num_params", 1000}, {"fsdp.backward_prefetch", "NONE"},
     {"fsdp.forward_prefetch", true}, {"fsdp.cpu_offload", true}, {"fsdp.activation_checkpointing", true},
     {"launch.rdzv_backend", "c10d"}},
    {},  // every default, 'auto' values included
};

}  // namespace

TEST_CASE("DeepSpeed: import(export(job)) gives back every mapped key", "[config][export]") {
  for (const auto& values : kJobs) {
    const json job = job_of(values).job;
    ExportResult e = export_deepspeed(job);
    ImportResult back = import_deepspeed(job_registry(), e.doc, "ds_config.json");
    check_round_trip(job, back, e.mapped);
  }
}

TEST_CASE("DeepSpeed export: keys and value types as DeepSpeed documents them", "[config][export]") {
  const json job = job_of(kJobs[0]).job;
  json ds = export_deepspeed(job, 8).doc;
  CHECK(ds["train_batch_size"] == 64);
  CHECK(ds["train_micro_batch_size_per_gpu"] == 4);
  CHECK(ds["gradient_accumulation_steps"] == 2);
  CHECK(ds["zero_optimization"]["stage"] == 3);
  CHECK(ds["zero_optimization"]["offload_optimizer"]["device"] == "cpu");
  CHECK(ds["fp16"]["enabled"] == true);
  CHECK(ds["bf16"]["enabled"] == false);
  CHECK(ds["optimizer"]["type"] == "AdamW");
  CHECK(ds["optimizer"]["params"]["betas"].size() == 2);
  CHECK(ds["scheduler"]["type"] == "WarmupCosineLR");
  // Without train.global_batch_size: micro x accumulation x world, DeepSpeed's own definition.
  const json plain = job_of({{"train.batch_size", 3}, {"train.grad_accum", 2}}).job;
  CHECK(export_deepspeed(plain, 4).doc["train_batch_size"] == 24);
  CHECK_FALSE(export_deepspeed(plain, 0).doc.contains("train_batch_size"));
  // 'auto' settings become the numbers the worker would use; DeepSpeed takes no "auto".
  CHECK(export_deepspeed(job_of({}).job).doc["zero_optimization"]["overlap_comm"].is_boolean());
}

TEST_CASE("accelerate: import(export(job)) gives back every mapped key", "[config][export]") {
  for (const auto& values : kJobs) {
    const json job = job_of(values).job;
    ExportResult e = export_accelerate(job);
    ImportResult back = import_accelerate(job_registry(), e.doc, "config.yaml", ".");
    check_round_trip(job, back, e.mapped);
  }
}

TEST_CASE("config export writes files that import back", "[config][export]") {
  char dir[] = "/tmp/mtrain-export-XXXXXX";
  REQUIRE(mkdtemp(dir));
  const std::string job_file = std::string(dir) + "/job.yaml";
  std::ofstream(job_file) << "strategy: zero2\ntrain:\n  precision: bf16\n  grad_accum: 4\noptim:\n  grad_clip: 1.0\n"
                             "model:\n  name: mlp\n";
  for (const auto to : {ImportFormat::DeepSpeed, ImportFormat::Accelerate}) {
    ExportOptions opt;
    opt.file = job_file;
    opt.to = to;
    opt.output = std::string(dir) + "/out." + (to == ImportFormat::DeepSpeed ? "json" : "yaml");
    std::ostringstream out, err;
    CHECK(config_export(job_registry(), opt, out, err) == 0);
    CHECK(err.str().find("model.name") != std::string::npos);  // a setting neither tool carries
    ImportResult back = import_file(job_registry(), opt.output);
    CHECK(back.values.at("strategy") == "zero2");
    CHECK(back.values.at("train.precision") == "bf16");
    CHECK(back.values.at("train.grad_accum") == 4);
    CHECK(back.values.at("optim.grad_clip") == 1.0);
    std::remove(opt.output.c_str());
  }
  std::remove(job_file.c_str());
  rmdir(dir);
}

TEST_CASE("accelerate environment: the names accelerate launch sets", "[config][export]") {
  auto ds = accelerate_env(job_of({{"strategy", "zero3"}, {"train.precision", "bf16"}, {"optim.grad_clip", 1.0},
                                   {"zero.offload_param_device", "cpu"}, {"zero.offload_optimizer_device", "cpu"}})
                               .job);
  CHECK(ds.at("ACCELERATE_MIXED_PRECISION") == "bf16");
  CHECK(ds.at("ACCELERATE_USE_DEEPSPEED") == "true");
  CHECK(ds.at("ACCELERATE_DEEPSPEED_ZERO_STAGE") == "3");
  CHECK(ds.at("ACCELERATE_GRADIENT_CLIPPING") == "1.0");
  CHECK(ds.at("ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE") == "cpu");
  CHECK(ds.count("ACCELERATE_USE_FSDP") == 0);
  auto fsdp = accelerate_env(job_of({{"strategy", "fsdp"}, {"fsdp.wrap_policy", "layer"}}).job);
  CHECK(fsdp.at("ACCELERATE_USE_FSDP") == "true");
  CHECK(fsdp.at("FSDP_SHARDING_STRATEGY") == "FULL_SHARD");
  CHECK(fsdp.at("FSDP_AUTO_WRAP_POLICY") == "TRANSFORMER_BASED_WRAP");
  CHECK(fsdp.at("FSDP_OFFLOAD_PARAMS") == "false");
  CHECK(accelerate_env(job_of({}).job).at("ACCELERATE_MIXED_PRECISION") == "no");
  // As accelerate launch: the dynamo defaults always; the accumulation for DeepSpeed, and for the
  // rest only when it is not 1 (accelerate has no flag for it there, Accelerator reads it).
  auto ddp = accelerate_env(job_of({}).job);
  CHECK(ddp.at("ACCELERATE_DYNAMO_BACKEND") == "NO");
  CHECK(ddp.at("ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION") == "False");
  CHECK(ddp.count("ACCELERATE_GRADIENT_ACCUMULATION_STEPS") == 0);
  CHECK(ds.at("ACCELERATE_GRADIENT_ACCUMULATION_STEPS") == "1");
  CHECK(accelerate_env(job_of({{"train.grad_accum", 4}}).job).at("ACCELERATE_GRADIENT_ACCUMULATION_STEPS") == "4");
}

TEST_CASE("trainer settings a program will not get are named", "[config][export]") {
  const Resolved r = job_of({{"strategy", "zero3"}, {"zero.offload_optimizer_device", "cpu"}, {"model.name", "mlp"},
                             {"launch.nproc_per_node", "2"}});
  auto none = unread_settings(job_registry(), r, PassConfig::None);
  CHECK(none == std::vector<std::string>{"strategy=zero3", "zero.offload_optimizer_device=cpu", "model.name=mlp"});
  CHECK(unread_warning(none, PassConfig::None).find("MTRAIN_JOB_FILE") != std::string::npos);
  CHECK(unread_settings(job_registry(), r, PassConfig::Deepspeed) == std::vector<std::string>{"model.name=mlp"});
  CHECK(unread_settings(job_registry(), r, PassConfig::Accelerate) == std::vector<std::string>{"model.name=mlp"});
  CHECK(unread_warning({}, PassConfig::None).empty());
}
