// accelerate's config.yaml (what `accelerate config` writes) → mtrain settings. accelerate
// counts num_processes over all machines; mtrain counts ranks per node.
#include <fmt/format.h>

#include "lib/config/foreign_keys.hpp"
#include "lib/config/import.hpp"
#include "lib/config/names.hpp"
#include "lib/core/error.hpp"

namespace mtrain::config {

namespace {

std::string text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

void import_ds_plugin(const Registry& reg, Importer& im, const json& d, const std::string& base_dir,
                      ImportResult& r) {
  for (auto it = d.begin(); it != d.end(); ++it) {
    const std::string path = "deepspeed_config." + it.key();
    const json& v = *it;
    const std::string& k = it.key();
    if (k == "zero_stage") {
      im.set(path, "zero.stage", v);
      im.set(path, "strategy", strategy_text_of_zero_stage(v.get<long long>()));
    } else if (k == "gradient_accumulation_steps") {
      im.set(path, "train.grad_accum", v);
    } else if (k == "gradient_clipping") {
      im.set(path, "optim.grad_clip", v);
    } else if (k == "offload_optimizer_device") {
      im.set(path, "zero.offload_optimizer_device", v);
    } else if (k == "offload_param_device") {
      im.set(path, "zero.offload_param_device", v);
    } else if (k == "zero3_save_16bit_model") {
      im.set(path, "zero.stage3_gather_16bit_weights_on_model_save", v);
    } else if (k == "zero3_init_flag") {
      im.warn(path, fmt::format("{}: mtrain-worker always builds ZeRO-3 parameters already sharded; "
                                "nothing to import",
                                v.dump()));
    } else if (k == "deepspeed_hostfile") {
      im.set(path, "launch.hostfile", v);
    } else if (k == "deepspeed_inclusion_filter") {
      im.set(path, "launch.include", v);
    } else if (k == "deepspeed_exclusion_filter") {
      im.set(path, "launch.exclude", v);
    } else if (k == "deepspeed_config_file" && v.is_string()) {
      std::string file = v.get<std::string>();
      if (!file.empty() && file[0] != '/') file = base_dir + "/" + file;
      ImportResult inner = import_file(reg, file);
      for (const auto& [key, value] : inner.values) r.values[key] = value;
      for (const auto& w : inner.warnings) r.warnings.push_back(file + ": " + w);
    } else {
      im.unmapped(path, v);
    }
  }
}

std::string fsdp_strategy(const json& v) {
  if (v.is_number_integer()) {
    static const char* by_number[] = {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD"};
    long long n = v.get<long long>();
    if (n >= 1 && n <= 4) return by_number[n - 1];
  }
  return text(v);
}

void import_fsdp_plugin(Importer& im, const json& f) {
  for (auto it = f.begin(); it != f.end(); ++it) {
    const std::string path = "fsdp_config." + it.key();
    const json& v = *it;
    const std::string& k = it.key();
    if (k == "fsdp_sharding_strategy") {
      im.set(path, "fsdp.sharding_strategy", fsdp_strategy(v));
    } else if (k == "fsdp_auto_wrap_policy") {
      const std::string p = text(v), policy = foreign::to_mtrain(foreign::kWrapPolicies, p);
      if (policy != p) im.set(path, "fsdp.wrap_policy", policy);
      else im.unmapped(path, v);
    } else if (k == "fsdp_min_num_params") {
      im.set(path, "fsdp.min_num_params", v);
    } else if (k == "fsdp_backward_prefetch" || k == "fsdp_backward_prefetch_policy") {
      const std::string p = text(v);
      im.set(path, "fsdp.backward_prefetch", foreign::to_mtrain(foreign::kPrefetch, p));
    } else if (k == "fsdp_forward_prefetch") {
      im.set(path, "fsdp.forward_prefetch", v);
    } else if (k == "fsdp_offload_params") {
      im.set(path, "fsdp.cpu_offload", v);
    } else if (k == "fsdp_activation_checkpointing") {
      im.set(path, "fsdp.activation_checkpointing", v);
    } else {
      im.unmapped(path, v);
    }
  }
}

}  // namespace

// Accelerator(log_with=…, project_dir=…, logging_dir=…): its TensorBoard tracker writes under
// logging_dir (project_dir when unset), as mtrain's log.tensorboard does; its MLflow tracker takes
// the server from MLFLOW_TRACKING_URI, which no config file holds.
static void import_trackers(Importer& im, const json& doc) {
  std::vector<std::string> names;
  const json& lw = doc["log_with"];
  if (lw.is_array()) {
    for (const auto& n : lw) names.push_back(text(n));
  } else {
    names.push_back(text(lw));
  }
  const std::string dir = doc.contains("logging_dir") ? text(doc["logging_dir"])
                          : doc.contains("project_dir") ? text(doc["project_dir"]) : "";
  for (const std::string& n : names) {
    if (n == "tensorboard" || n == "all") {
      if (dir.empty()) im.warn("log_with", "tensorboard needs logging_dir or project_dir (accelerate refuses it without one); set log.tensorboard");
      else im.set(doc.contains("logging_dir") ? "logging_dir" : "project_dir", "log.tensorboard", dir);
    }
    if (n == "mlflow" || n == "all") {
      im.warn("log_with", "mlflow: accelerate takes the server from MLFLOW_TRACKING_URI, which the file does not hold; set log.mlflow.uri: http://HOST:PORT");
    }
    if (n != "tensorboard" && n != "mlflow" && n != "all") {
      im.warn("log_with", fmt::format("{}: mtrain's trainer writes TensorBoard files and MLflow runs, not this tracker (docs/tracking.md); not imported", n));
    }
  }
}

static ImportResult import_accelerate_walk(const Registry& reg, const json& doc, const std::string& origin,
                                          const std::string& base_dir) {
  if (!doc.is_object()) throw Error(fmt::format("{}: an accelerate config must be a YAML mapping", origin));
  ImportResult r;
  r.format = ImportFormat::Accelerate;
  r.origin = origin;
  Importer im(reg, r);
  const std::string type = doc.contains("distributed_type") ? text(doc["distributed_type"]) : "NO";
  const long long machines = doc.value("num_machines", json(1)).is_number_integer() ? doc.value("num_machines", json(1)).get<long long>() : 1;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& k = it.key();
    const json& v = *it;
    if (k == "compute_environment") {
      if (v != "LOCAL_MACHINE") im.warn(k, fmt::format("{}: mtrain launches on machines it can reach (local, ssh, Slurm); not imported", v.dump()));
    } else if (k == "distributed_type") {
      if (type == "MULTI_GPU") im.set(k, "strategy", to_string(StrategyName::Ddp));
      else if (type == "MULTI_CPU") im.set(k, "strategy", to_string(StrategyName::Ddp)), im.set(k, "launch.device", "cpu");
      else if (type == "FSDP") im.set(k, "strategy", to_string(StrategyName::Fsdp));
      else if (type == "NO") im.set(k, "launch.nproc_per_node", "1");
      else if (type != "DEEPSPEED") im.warn(k, fmt::format("'{}' has no mtrain counterpart (ddp, zero1-3, fsdp); not imported", type));
      // DEEPSPEED: the strategy comes from deepspeed_config.zero_stage.
    } else if (k == "deepspeed_config" && v.is_object()) {
      if (type != "DEEPSPEED") for (auto d = v.begin(); d != v.end(); ++d) im.warn(k + "." + d.key(), "distributed_type is not DEEPSPEED, so this does not apply; not imported");
      else import_ds_plugin(reg, im, v, base_dir, r);
    } else if (k == "fsdp_config" && v.is_object()) {
      if (type != "FSDP") for (auto d = v.begin(); d != v.end(); ++d) im.warn(k + "." + d.key(), "distributed_type is not FSDP, so this does not apply; not imported");
      else import_fsdp_plugin(im, v);
    } else if (k == "mixed_precision") {
      const std::string p = v == false ? "no" : text(v);
      if (p == "no") im.set(k, "train.precision", "fp32");
      else if (p == "fp16" || p == "bf16") im.set(k, "train.precision", p);
      else im.warn(k, fmt::format("'{}' is not an mtrain precision (fp32, bf16, fp16); not imported", p));
    } else if (k == "num_machines") {
      im.set(k, "launch.nnodes", v);
    } else if (k == "num_processes") {
      if (!v.is_number_integer() || v.get<long long>() < 1) throw Error(fmt::format("{}: num_processes: expected a positive count, got {}", origin, v.dump()));
      const long long total = v.get<long long>();
      if (total % machines != 0) im.warn(k, fmt::format("{} processes do not divide over {} machines; not imported", total, machines));
      else im.set(k, "launch.nproc_per_node", std::to_string(total / machines));
    } else if (k == "rdzv_backend") {
      if (v == "static" || v == "c10d") im.set(k, "launch.rdzv_backend", v);
      else im.warn(k, fmt::format("{}: mtrain's rendezvous is static or c10d; not imported", v.dump()));
    } else if (k == "main_process_ip") {
      im.set(k, "launch.master_addr", text(v));
    } else if (k == "main_process_port") {
      im.set(k, "launch.master_port", v);
    } else if (k == "gpu_ids") {
      // accelerate's "all" restricts nothing (it sets CUDA_VISIBLE_DEVICES only for a list), and
      // `accelerate config` writes it on every machine, GPU-less ones included: mtrain's default
      // (every GPU there is, CPU ranks where there is none) is the same choice. A list is a mask.
      if (text(v) != "all") im.set(k, "launch.gpus", text(v));
    } else if (k == "use_cpu") {
      if (v == true) im.set(k, "launch.device", "cpu");
    } else if (k == "log_with") {
      import_trackers(im, doc);
    } else if ((k == "project_dir" || k == "logging_dir") && doc.contains("log_with")) {
      // read with log_with
    } else if (k == "machine_rank") {
      im.warn(k, fmt::format("{}: mtrain starts every node from one command and numbers them itself; not imported", v.dump()));
    } else {
      im.unmapped(k, v);
    }
  }
  return r;
}

// As for DeepSpeed: a value of an unexpected type ends as a user-facing error.
ImportResult import_accelerate(const Registry& reg, const json& doc, const std::string& origin,
                               const std::string& base_dir) {
  try {
    return import_accelerate_walk(reg, doc, origin, base_dir);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: a value has a type accelerate does not use there ({})", origin, e.what()),
                "Compare the file with the output of `accelerate config`.");
  }
}

}  // namespace mtrain::config
