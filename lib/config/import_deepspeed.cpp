// DeepSpeed ds_config.json → mtrain settings. Key names follow DeepSpeed's config reference;
// "auto" is the HuggingFace Trainer's placeholder (it fills the value from its own arguments),
// which mtrain either keeps as 'auto' where the setting supports it or reports.
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/config/foreign_keys.hpp"
#include "lib/config/import.hpp"
#include "lib/config/names.hpp"
#include "lib/core/error.hpp"

namespace mtrain::config {

namespace {

bool is_auto(const json& v) { return v.is_string() && v.get<std::string>() == "auto"; }

// "auto" for a setting without an 'auto' form: say what mtrain does instead.
void auto_kept(Importer& im, const std::string& path, const std::string& key, const std::string& instead) {
  im.warn(path, fmt::format("'auto' (filled in by the HuggingFace Trainer) has no fixed value here; "
                            "{} stays {} — set it with --set {}=…",
                            key, instead, key));
}

void map_or_auto(Importer& im, const json& v, const std::string& path, const std::string& key,
                 const std::string& instead) {
  if (is_auto(v) && !im.accepts_auto(key))
    auto_kept(im, path, key, instead);
  else
    im.set(path, key, v);
}

void import_fp16(Importer& im, const json& fp16, bool bf16_on) {
  const json enabled = fp16.value("enabled", json(false));
  const bool on = enabled == true;
  if (on && bf16_on)
    throw Error("fp16.enabled and bf16.enabled are both true",
                "DeepSpeed refuses this too: keep one of them (bf16 needs no loss scaling).");
  if (on) im.set("fp16.enabled", "train.precision", "fp16");
  // 'auto' (the HuggingFace Trainer fills it from --fp16) leaves fp32 here. The loss-scaling
  // values are not imported then: kept, they would warn "applies only to fp16" on every command.
  if (is_auto(enabled)) {
    std::vector<std::string> scaling;
    for (auto it = fp16.begin(); it != fp16.end(); ++it)
      if (it.key() != "enabled") scaling.push_back(it.key());
    im.warn("fp16.enabled", fmt::format("'auto' (the HuggingFace Trainer's --fp16) — mtrain keeps train.precision "
                                        "fp32{}",
                                        scaling.empty() ? std::string()
                                                        : fmt::format(", and the loss scaling ({}) is not imported: it "
                                                                      "applies to fp16 only (--precision fp16 "
                                                                      "--set precision.…)",
                                                                      fmt::join(scaling, ", "))));
    return;
  }
  for (auto it = fp16.begin(); it != fp16.end(); ++it) {
    const std::string path = "fp16." + it.key();
    if (it.key() == "enabled") continue;
    const std::string key = foreign::to_mtrain(foreign::kFp16Keys, it.key());
    if (key == it.key()) {
      im.unmapped(path, *it);
    } else if (enabled == false) {
      im.warn(path, "fp16 is disabled, so loss scaling does not apply; not imported");
    } else {
      map_or_auto(im, *it, path, key, "at its default");
    }
  }
}

void import_optimizer(Importer& im, const json& opt) {
  const std::string type = opt.value("type", "");
  std::string lower;
  for (char c : type) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool known = true;
  if (lower == "adam" || lower == "adamw" || lower == "fusedadam" || lower == "cpuadam")
    im.set("optimizer.type", "optim.name", "adamw");
  else if (lower == "sgd")
    im.set("optimizer.type", "optim.name", "sgd");
  else
    known = false, im.warn("optimizer.type", fmt::format("'{}' is not an mtrain optimiser (adamw, sgd); "
                                                         "optim.name stays adamw",
                                                         type));
  for (auto it = opt.begin(); it != opt.end(); ++it)
    if (it.key() != "type" && it.key() != "params") im.unmapped("optimizer." + it.key(), *it);
  if (!opt.contains("params")) return;
  for (auto it = opt["params"].begin(); it != opt["params"].end(); ++it) {
    const std::string path = "optimizer.params." + it.key();
    const json& v = *it;
    if (!known) {
      im.warn(path, "belongs to an optimiser mtrain does not have; not imported");
    } else if (it.key() == "lr") {
      map_or_auto(im, v, path, "optim.lr", "at its default");
    } else if (it.key() == "betas") {
      if (is_auto(v)) auto_kept(im, path, "optim.beta1", "at its default (also optim.beta2)");
      else if (v.is_array() && v.size() == 2) im.set(path, "optim.beta1", v[0]), im.set(path, "optim.beta2", v[1]);
      else throw Error(fmt::format("{}: expected two numbers, got {}", path, v.dump()));
    } else if (it.key() == "eps") {
      map_or_auto(im, v, path, "optim.eps", "at its default");
    } else if (it.key() == "weight_decay") {
      map_or_auto(im, v, path, "optim.weight_decay", "at its default");
    } else if (it.key() == "momentum") {
      map_or_auto(im, v, path, "optim.momentum", "at its default");
    } else if (it.key() == "nesterov") {
      im.set(path, "optim.nesterov", v);
    } else if (it.key() == "adam_w_mode" && v == false) {
      im.warn(path, "false asks for Adam with L2 weight decay; mtrain's adamw decays decoupled");
    } else {
      im.unmapped(path, v);
    }
  }
}

void import_scheduler(Importer& im, const json& sch) {
  const std::string type = sch.value("type", "");
  const json params = sch.value("params", json::object());
  for (auto it = sch.begin(); it != sch.end(); ++it)
    if (it.key() != "type" && it.key() != "params") im.unmapped("scheduler." + it.key(), *it);
  if (type != "WarmupLR" && type != "WarmupDecayLR" && type != "WarmupCosineLR") {
    im.warn("scheduler.type", fmt::format("'{}' has no mtrain schedule (WarmupLR, WarmupDecayLR and "
                                          "WarmupCosineLR do); sched.name stays cosine",
                                          type));
    for (auto it = params.begin(); it != params.end(); ++it)
      im.warn("scheduler.params." + it.key(), "belongs to that schedule; not imported");
    return;
  }
  if (!params.contains("warmup_type"))
    im.warn("scheduler.params.warmup_type", "not given, so DeepSpeed warms up along a log curve; mtrain's "
                                            "warmup is linear");
  im.set("scheduler.type", "sched.name", type == "WarmupLR" ? "constant" : type == "WarmupDecayLR" ? "linear" : "cosine");
  const long long warmup =
      params.contains("warmup_num_steps") && params["warmup_num_steps"].is_number_integer() ? params["warmup_num_steps"].get<long long>() : 0;
  for (auto it = params.begin(); it != params.end(); ++it) {
    const std::string path = "scheduler.params." + it.key();
    const json& v = *it;
    if (it.key() == "warmup_num_steps") {
      map_or_auto(im, v, path, "sched.warmup_steps", "at its default");
    } else if (it.key() == "warmup_max_lr") {
      if (im.has("optim.lr") && v.is_number() && std::fabs(im.value("optim.lr").get<double>() - v.get<double>()) > 1e-12)
        im.warn(path, fmt::format("{} overrides optimizer.params.lr {} (DeepSpeed does the same)", v.dump(),
                                  im.value("optim.lr").dump()));
      map_or_auto(im, v, path, "optim.lr", "at its default");
    } else if (it.key() == "warmup_min_lr") {
      if (!(v.is_number() && v.get<double>() == 0.0))
        im.warn(path, fmt::format("{}: mtrain warms up from 0; not imported", v.dump()));
    } else if (it.key() == "warmup_type") {
      if (v != "linear") im.warn(path, fmt::format("{}: mtrain's warmup is linear; not imported", v.dump()));
    } else if (it.key() == "total_num_steps" && type == "WarmupDecayLR") {
      if (is_auto(v)) {
        auto_kept(im, path, "sched.total_iters", "0 (the whole run)");
      } else {
        im.set(path, "sched.start_factor", 1.0);
        im.set(path, "sched.end_factor", 0.0);
        // Only a whole number in range is cast (1e300 cast to long long printed as
        // -9223372036854775808); anything else goes to the registry as it is, which refuses it
        // with the value and the range.
        const bool whole = v.is_number_integer() ||
                           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
                            std::fabs(v.get<double>()) < 9.0e15);
        if (!whole) im.set(path, "sched.total_iters", v);
        else im.set(path, "sched.total_iters", std::max<long long>(0, static_cast<long long>(v.get<double>()) - warmup));
      }
    } else if (it.key() == "total_num_steps" && type == "WarmupCosineLR") {
      im.warn(path, "the cosine schedule spans the whole run (train.max_steps); not imported");
    } else if (it.key() == "cos_min_ratio" && v.is_number()) {
      if (im.has("optim.lr")) im.set(path, "sched.min_lr", v.get<double>() * im.value("optim.lr").get<double>());
      else im.warn(path, "needs optimizer.params.lr to become sched.min_lr; not imported");
    } else {
      im.unmapped(path, v);
    }
  }
}

void import_offload(Importer& im, const json& off, const std::string& path, const std::string& key) {
  for (auto it = off.begin(); it != off.end(); ++it) {
    if (it.key() == "device") im.set(path + ".device", key, *it);
    else im.unmapped(path + "." + it.key(), *it);
  }
}

void import_zero(Importer& im, const json& z) {
  for (auto it = z.begin(); it != z.end(); ++it) {
    const std::string path = "zero_optimization." + it.key();
    const json& v = *it;
    if (it.key() == "stage") {
      im.set(path, "zero.stage", v);
      const long long stage = v.get<long long>();
      im.set(path, "strategy", strategy_text_of_zero_stage(stage));
    } else if (it.key() == "stage3_gather_fp16_weights_on_model_save") {  // the older spelling
      im.set(path, "zero.stage3_gather_16bit_weights_on_model_save", v);
    } else if (const std::string key = foreign::to_mtrain(foreign::kZeroKeys, it.key()); key != it.key()) {
      map_or_auto(im, v, path, key, "at its default");
    } else if (it.key() == "offload_optimizer" && v.is_object()) {
      import_offload(im, v, path, "zero.offload_optimizer_device");
    } else if (it.key() == "offload_param" && v.is_object()) {
      import_offload(im, v, path, "zero.offload_param_device");
    } else if (it.key() == "cpu_offload" && v.is_boolean()) {  // the pre-0.3 spelling
      im.set(path, "zero.offload_optimizer_device", v == true ? "cpu" : "none");
    } else if (it.key() == "cpu_offload_params" && v.is_boolean()) {
      im.set(path, "zero.offload_param_device", v == true ? "cpu" : "none");
    } else {
      im.unmapped(path, v);
    }
  }
}

// DeepSpeed's monitor writes TensorBoard files to output_path/job_name; mtrain writes one subfolder
// per run under log.tensorboard, so the same `tensorboard --logdir output_path` shows both.
void import_tensorboard(Importer& im, const json& v) {
  bool enabled = false;
  std::string output_path, job_name = "DeepSpeedJobName";  // DeepSpeed's default job_name
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string path = "tensorboard." + it.key();
    if (it.key() == "enabled" && it->is_boolean()) enabled = it->get<bool>();
    else if (it.key() == "output_path" && it->is_string()) output_path = it->get<std::string>();
    else if (it.key() == "job_name" && it->is_string()) job_name = it->get<std::string>();
    else im.unmapped(path, *it);
  }
  if (!enabled) return;
  if (output_path.empty()) {
    im.warn("tensorboard.output_path", "not given (DeepSpeed then writes under ~/<job id>/logs); mtrain writes under tensorboard/");
    output_path = "tensorboard";
  }
  while (output_path.size() > 1 && output_path.back() == '/') output_path.pop_back();
  im.set("tensorboard", "log.tensorboard", output_path + "/" + job_name);
}

}  // namespace

static ImportResult import_deepspeed_walk(const Registry& reg, const json& ds, const std::string& origin) {
  if (!ds.is_object()) throw Error(fmt::format("{}: a DeepSpeed config must be a JSON object", origin));
  ImportResult r;
  r.format = ImportFormat::DeepSpeed;
  r.origin = origin;
  Importer im(reg, r);
  const bool bf16_on = ds.contains("bf16") && ds["bf16"].is_object() && ds["bf16"].value("enabled", json(false)) == true;
  for (auto it = ds.begin(); it != ds.end(); ++it) {
    const std::string& k = it.key();
    const json& v = *it;
    if (k == "train_batch_size") map_or_auto(im, v, k, "train.global_batch_size", "0 (derived from batch_size x grad_accum x world size)");
    else if (k == "train_micro_batch_size_per_gpu") map_or_auto(im, v, k, "train.batch_size", "at its default");
    else if (k == "gradient_accumulation_steps") map_or_auto(im, v, k, "train.grad_accum", "at its default");
    else if (k == "gradient_clipping") map_or_auto(im, v, k, "optim.grad_clip", "at its default");
    else if (k == "steps_per_print") im.set(k, "train.log_interval", v);
    else if (k == "fp16" && v.is_object()) import_fp16(im, v, bf16_on);
    else if (k == "bf16" && v.is_object()) {
      for (auto b = v.begin(); b != v.end(); ++b) {
        if (b.key() != "enabled") im.unmapped("bf16." + b.key(), *b);
        else if (*b == true) im.set("bf16.enabled", "train.precision", "bf16");
        else if (is_auto(*b)) im.warn("bf16.enabled", "'auto' (the HuggingFace Trainer's --bf16) — mtrain keeps train.precision fp32");
      }
    } else if (k == "optimizer" && v.is_object()) import_optimizer(im, v);
    else if (k == "scheduler" && v.is_object()) import_scheduler(im, v);
    else if (k == "zero_optimization" && v.is_object()) import_zero(im, v);
    else if (k == "tensorboard" && v.is_object()) import_tensorboard(im, v);
    else if ((k == "wandb" || k == "comet" || k == "csv_monitor") && v.is_object()) {
      im.warn(k, "mtrain's trainer writes TensorBoard files (log.tensorboard) and MLflow runs (log.mlflow.uri), "
                 "not this monitor (docs/tracking.md says why); its metrics.jsonl is the CSV; not imported");
    } else im.unmapped(k, v);
  }
  return r;
}

// The walk reads values with the types DeepSpeed documents; a value of another type that slips
// past its checks must still end as a user-facing error, not an escaped json::exception
// (found by fuzz_import_deepspeed: "optimizer": {"type": 1e9}).
ImportResult import_deepspeed(const Registry& reg, const json& ds, const std::string& origin) {
  try {
    return import_deepspeed_walk(reg, ds, origin);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: a value has a type DeepSpeed does not use there ({})", origin, e.what()),
                "Compare the file with DeepSpeed's configuration reference: names are strings, sizes numbers.");
  }
}

}  // namespace mtrain::config
