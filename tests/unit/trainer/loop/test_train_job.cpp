// TrainJob, the trainer's one typed view of a job: every job setting of the registry reaches a
// field (or is listed below with the reason it does not), the struct defaults are the registry's,
// and a bad job fails once, here, with the paragraph error naming where and which key.
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>

#include "lib/config/names.hpp"
#include "lib/config/registry.hpp"
#include "lib/core/error.hpp"
#include "lib/trainer/loop/train_job.hpp"

using namespace mtrain::trainer;
using mtrain::config::ModelName;
using mtrain::config::StrategyName;
using nlohmann::json;

namespace {

// Every field of a TrainJob but `settings` (the JSON it was made from), so that two jobs compare
// by what the trainer reads.
json fields(const TrainJob& t) {
  const StrategyOptions& s = t.strat;
  const ZeroOptions& z = s.zero;
  const FsdpOptions& f = s.fsdp;
  const ModelSpec& m = t.model;
  const DataSpec& d = t.data;
  return {
      {"strategy", mtrain::config::to_string(t.strategy)},
      {"strat",
       {s.bucket_cap_mb, s.first_bucket_mb, s.find_unused_parameters, s.grad_clip, s.precision, s.local_world_size}},
      {"optim",
       {s.optim.name, s.optim.weight_decay, s.optim.beta1, s.optim.beta2, s.optim.eps, s.optim.momentum,
        s.optim.nesterov}},
      {"zero",
       {z.allgather_bucket_size, z.reduce_bucket_size,
        z.overlap_comm.has_value() ? json(*z.overlap_comm) : json("auto"), z.contiguous_gradients,
        z.stage3_prefetch_bucket_size, z.stage3_param_persistence_threshold, z.stage3_max_live_parameters,
        z.stage3_max_reuse_distance, z.offload_optimizer_device, z.offload_param_device,
        z.stage3_gather_16bit_weights_on_model_save}},
      {"fsdp",
       {f.sharding_strategy, f.wrap_policy, f.min_num_params, f.forward_prefetch, f.backward_prefetch,
        f.limit_all_gathers, f.cpu_offload}},
      {"loss_scale",
       {s.loss_scale.loss_scale, s.loss_scale.initial_scale_power, s.loss_scale.loss_scale_window,
        s.loss_scale.hysteresis, s.loss_scale.min_loss_scale}},
      {"sched",
       {t.sched.name, t.sched.lr, t.sched.warmup_steps, t.sched.min_lr, t.sched.step_size, t.sched.gamma,
        t.sched.start_factor, t.sched.end_factor, t.sched.total_iters}},
      {"model",
       {mtrain::config::to_string(m.name),
        m.n_layer,
        m.n_head,
        m.n_embd,
        m.block_size,
        m.vocab_size,
        m.dropout,
        m.hidden,
        m.depth,
        m.input_dim,
        m.num_classes,
        m.path,
        m.eval_path,
        m.loss,
        m.wrap_module_types,
        m.wrap_policy,
        m.min_num_params,
        m.activation_checkpointing,
        m.language_model,
        m.trust_code}},
      {"data", {d.name, d.path, d.val_path, d.num_samples, d.val_fraction, d.shuffle, d.drop_last}},
      {"loop",
       {t.max_steps,
        t.max_epochs,
        t.batch_size,
        t.grad_accum,
        t.global_batch_size,
        t.seed,
        t.work_dir,
        t.log_interval,
        t.timing_warmup_steps,
        t.val_interval,
        t.val_steps,
        t.threads,
        t.checkpoint_interval,
        t.checkpoint_keep,
        mtrain::config::to_string(t.resume),
        t.overwrite,
        t.init,
        t.init_strict,
        t.comm_timeout_s,
        t.comm_shared_memory,
        t.cpu_memory_pool,
        t.average_tokens_across_ranks}},
      {"export", {t.hf_config, t.hf_prefix.value_or("<auto>")}},
      {"log",
       {t.tracking.tensorboard_dir, t.tracking.mlflow_uri, t.tracking.mlflow_experiment, t.tracking.mlflow_run_name,
        t.tracking.mlflow_tags}},
  };
}

// Values of `s` other than its default, most likely first, all within its range/choices.
std::vector<json> other_values(const mtrain::config::Setting& s) {
  using mtrain::config::Type;
  const json& def = s.default_value;
  std::vector<json> out;
  auto in_range = [&](double v) { return (!s.min || v >= *s.min) && (!s.max || v <= *s.max); };
  switch (s.type) {
    case Type::Bool:
      out.push_back(def.is_boolean() ? json(!def.get<bool>()) : json(true));
      out.push_back(false);
      break;
    case Type::Int: {
      const long long d = def.is_number() ? def.get<long long>() : 64;  // "auto"
      for (long long v : {d + 1, d - 1, d * 2 + 3, 1LL, 0LL})
        if (v != d && in_range(static_cast<double>(v))) out.push_back(v);
      if (s.min) out.push_back(static_cast<long long>(*s.min));
      break;
    }
    case Type::Float: {
      const double d = def.is_number() ? def.get<double>() : 0.5;
      for (double v : {d * 2 + 0.25, d / 2, d + 0.125, 0.5, 0.0})
        if (v != d && in_range(v)) out.push_back(v);
      if (s.max) out.push_back(*s.max);
      break;
    }
    case Type::Choice:
      for (const auto& c : s.choices)
        if (json(c) != def) out.push_back(c);
      break;
    case Type::String:
      for (const char* v : {"other/file.bin", "cpu", "Block", "/tmp/x", "http://127.0.0.1:5000", "team=nlp"})
        if (json(v) != def) out.push_back(v);
      break;
  }
  // A list setting (fsdp.wrap_module_types) holds a list of such values.
  if (s.list)
    for (auto& v : out) v = json::array({v});
  return out;
}

std::string error_of(const json& job, const std::string& origin) {
  try {
    train_job_from_json(job, origin);
  } catch (const mtrain::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("TrainJob: the struct defaults are the registry's", "[trainer][loop][train_job]") {
  const TrainJob from_table = train_job_from_json(json::object());
  TrainJob plain;
  // DataSpec's own default is a resolved name (synthetic, what tests build by hand); the table's
  // data.name is auto, which resolves to text for its default model, gpt.
  plain.data.name = mtrain::config::DataName::Text;
  CHECK(fields(from_table).dump() == fields(plain).dump());
  CHECK(from_table.settings == mtrain::config::job_registry().defaults());
  CHECK(from_table.strategy == StrategyName::Ddp);
  CHECK(from_table.model.name == ModelName::Gpt);
  CHECK(from_table.data.name == mtrain::config::DataName::Text);  // data.name auto, for gpt
  CHECK(from_table.zero_stage() == 0);
}

TEST_CASE("TrainJob: every job setting reaches a field", "[trainer][loop][train_job]") {
  // Settings the trainer does not read, and why.
  const std::set<std::string> not_read = {
      "zero.stage",               // agrees with strategy or fails (checked below); the stage is the strategy's
  };
  const auto& reg = mtrain::config::job_registry();
  const std::string base = fields(train_job_from_json(json::object())).dump();
  int checked = 0;
  for (const auto& s : reg.all()) {
    if (s.scope != mtrain::config::Scope::Job || not_read.count(s.key)) continue;
    INFO(s.key);
    bool changed = false;
    for (const json& v : other_values(s)) {
      json job = json::object();
      mtrain::config::set(job, s.key, v);
      TrainJob t;
      try {
        t = train_job_from_json(job);
      } catch (const mtrain::Error&) {
        continue;  // a value the setting's own check refuses (e.g. a text format)
      }
      CHECK(mtrain::config::get(t.settings, s.key) == v);
      if (fields(t).dump() != base) {
        changed = true;
        break;
      }
    }
    CHECK(changed);
    ++checked;
  }
  CHECK(checked > 80);
}

TEST_CASE("TrainJob: the strategy carries the ZeRO stage, zero.stage only has to agree", "[trainer][loop][train_job]") {
  for (const auto& name : mtrain::config::choice_names<mtrain::config::StrategyName>()) {
    json job = {{"strategy", name}};
    const TrainJob t = train_job_from_json(job);
    CHECK(mtrain::config::to_string(t.strategy) == name);
    CHECK(t.zero_stage() == (name.rfind("zero", 0) == 0 ? name.back() - '0' : 0));
    if (t.zero_stage() > 0) {
      job["zero"] = {{"stage", t.zero_stage()}};
      CHECK(train_job_from_json(job).strategy == t.strategy);
    }
  }
  const std::string e = error_of({{"strategy", "zero2"}, {"zero", {{"stage", 3}}}}, "job.json");
  CHECK_THAT(e, Catch::StartsWith("error: job.json: zero.stage is 3 but strategy is 'zero2'") &&
                    Catch::Contains("set strategy to zero3"));
  CHECK_THAT(error_of({{"strategy", "fsdp"}, {"zero", {{"stage", 1}}}}, "job.json"),
             Catch::Contains("zero.stage is 1 but strategy is 'fsdp'"));
}

TEST_CASE("TrainJob: precision is stored once, shuffle/drop_last are the data's", "[trainer][loop][train_job]") {
  const TrainJob t = train_job_from_json(
      {{"train", {{"precision", "bf16"}}}, {"data", {{"shuffle", false}, {"drop_last", false}}}});
  CHECK(t.precision() == mtrain::config::Precision::Bf16);
  CHECK(t.strat.precision == mtrain::config::Precision::Bf16);
  CHECK_FALSE(t.data.shuffle);
  CHECK_FALSE(t.data.drop_last);
}

TEST_CASE("TrainJob: model, data and the derived values", "[trainer][loop][train_job]") {
  const TrainJob t = train_job_from_json(
      {{"model", {{"name", "resnet18"}, {"num_classes", 7}}}, {"fsdp", {{"wrap_module_types", "Block"}}}});
  CHECK(t.model.name == ModelName::Resnet18);
  CHECK(t.model.num_classes == 7);
  CHECK(t.model.wrap_module_types == "Block");
  CHECK(t.data.name == mtrain::config::DataName::Synthetic);  // auto, for a classifier
  CHECK_FALSE(t.model.language_model);
  CHECK(train_job_from_json({{"model", {{"name", "torchscript"}, {"loss", "lm_cross_entropy"}}}}).model.language_model);
  CHECK(train_job_from_json({{"model", {{"name", "torchscript"}}}, {"data", {{"name", "tokens"}}}}).model.language_model);
  // DeepSpeed's "auto" sizes follow the model width.
  const TrainJob a = train_job_from_json({{"model", {{"n_embd", 64}}},
                                          {"zero", {{"reduce_bucket_size", "auto"},
                                                    {"stage3_prefetch_bucket_size", "auto"},
                                                    {"stage3_param_persistence_threshold", "auto"}}}});
  CHECK(a.strat.zero.reduce_bucket_size == 64 * 64);
  CHECK(a.strat.zero.stage3_prefetch_bucket_size == 64 * 64 * 9 / 10);
  CHECK(a.strat.zero.stage3_param_persistence_threshold == 640);
}

TEST_CASE("TrainJob: zero.overlap_comm 'auto' leaves the stage to decide, a boolean is kept",
          "[trainer][loop][train_job]") {
  auto job = mtrain::config::job_registry().defaults();
  CHECK_FALSE(train_job_from_json(job).strat.zero.overlap_comm.has_value());
  for (bool v : {true, false}) {
    mtrain::config::set(job, "zero.overlap_comm", v);
    const auto z = train_job_from_json(job).strat.zero;
    REQUIRE(z.overlap_comm.has_value());
    CHECK(*z.overlap_comm == v);
  }
}

TEST_CASE("TrainJob: a bad job fails once with one paragraph naming the file and the key",
          "[trainer][loop][train_job]") {
  // A value of the wrong type.
  const std::string wrong = error_of({{"train", {{"max_steps", "ten"}}}}, "run/job.json");
  CHECK_THAT(wrong, Catch::StartsWith("error: run/job.json") && Catch::Contains("train.max_steps") &&
                        Catch::Contains("ten"));
  CHECK(wrong.find('\n') == std::string::npos);
  // Out of range, an unknown choice, an unknown key, not an object.
  CHECK_THAT(error_of({{"train", {{"batch_size", 0}}}}, "j"), Catch::Contains("train.batch_size"));
  CHECK_THAT(error_of({{"strategy", "zero4"}}, "j"), Catch::Contains("strategy") && Catch::Contains("zero4"));
  CHECK_THAT(error_of({{"model", {{"name", "gtp"}}}}, "j"), Catch::Contains("gtp") && Catch::Contains("gpt"));
  CHECK_THAT(error_of({{"optim", {{"lrr", 0.1}}}}, "j"), Catch::Contains("optim.lrr") && Catch::Contains("optim.lr"));
  CHECK_THAT(error_of(json::array(), "j"), Catch::Contains("JSON object"));
}
