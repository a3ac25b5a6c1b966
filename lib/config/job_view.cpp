#include "lib/config/job_view.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::config {

namespace {

using Set = std::function<void(JobView&, const json& value, const std::string& key)>;

// A value as its field's type: a number, bool or text as itself, a choice setting's name as its
// enum (choice_table.hpp).
template <class T>
void read(const json& x, const std::string& key, T& out) {
  if constexpr (is_choice<T>::value) out = choice_from_text<T>(x.get<std::string>(), key);
  else out = x.get<T>();
}
// A setting that also takes the text 'auto' (Setting::allow_auto): nullopt then.
template <class T>
void read(const json& x, const std::string& key, std::optional<T>& out) {
  if (x.is_string()) out.reset();
  else read(x, key, out.emplace());
}

template <class T>
Set field(T JobView::*member) {
  return [member](JobView& v, const json& x, const std::string& key) { read(x, key, v.*member); };
}
template <class Part, class T>
Set field(Part JobView::*part, T Part::*member) {
  return [part, member](JobView& v, const json& x, const std::string& key) { read(x, key, (v.*part).*member); };
}

using V = JobView;
using M = ModelView;
using S = StrategyView;

std::vector<JobViewBinding> model_bindings() {
  return {
      {"model.name", field(&V::model, &M::name)},
      {"model.path", field(&V::model, &M::path)},
      {"model.eval_path", field(&V::model, &M::eval_path)},
      {"model.trust_code", field(&V::model, &M::trust_code)},
      {"model.init", field(&V::model, &M::init)},
      {"model.init_strict", field(&V::model, &M::init_strict)},
      {"model.n_layer", field(&V::model, &M::n_layer)},
      {"model.n_head", field(&V::model, &M::n_head)},
      {"model.n_embd", field(&V::model, &M::n_embd)},
      {"model.block_size", field(&V::model, &M::block_size)},
      {"model.vocab_size", field(&V::model, &M::vocab_size)},
      {"model.hidden", field(&V::model, &M::hidden)},
      {"model.depth", field(&V::model, &M::depth)},
      {"model.input_dim", field(&V::model, &M::input_dim)},
      {"model.num_classes", field(&V::model, &M::num_classes)},
  };
}

std::vector<JobViewBinding> strategy_bindings() {
  return {
      // A strategy's name, or auto: the launcher's choice (names.hpp), not the setting's 'auto'.
      {"strategy",
       [](V& v, const json& x, const std::string& key) {
         const auto name = x.get<std::string>();
         v.strategy.name.reset();
         if (!is_auto_strategy(name)) v.strategy.name = strategy_from_text(name, key);
       }},
      {"ddp.bucket_cap_mb", field(&V::strategy, &S::ddp_bucket_cap_mb)},
      {"zero.reduce_bucket_size", field(&V::strategy, &S::zero_reduce_bucket_size)},
      {"zero.overlap_comm", field(&V::strategy, &S::zero_overlap_comm)},
      {"zero.stage3_param_persistence_threshold", field(&V::strategy, &S::zero_persistence_threshold)},
      {"zero.stage3_max_live_parameters", field(&V::strategy, &S::zero_max_live_parameters)},
      {"zero.offload_optimizer_device", field(&V::strategy, &S::zero_offload_optimizer)},
      {"zero.offload_param_device", field(&V::strategy, &S::zero_offload_param)},
      {"fsdp.sharding_strategy", field(&V::strategy, &S::fsdp_sharding)},
      {"fsdp.cpu_offload", field(&V::strategy, &S::fsdp_cpu_offload)},
      {"fsdp.activation_checkpointing", field(&V::strategy, &S::fsdp_activation_checkpointing)},
  };
}

std::vector<JobViewBinding> train_bindings() {
  return {
      {"train.precision", field(&V::precision)},
      {"train.batch_size", field(&V::batch_size)},
      {"train.cpu_memory_pool", field(&V::cpu_memory_pool)},
      {"train.work_dir", field(&V::work_dir)},
      {"checkpoint.resume",
       [](V& v, const json& x, const std::string&) { v.resume = resume_from_text(x.get<std::string>()); }},
      {"checkpoint.overwrite", field(&V::checkpoint_overwrite)},
  };
}

}  // namespace

const std::vector<JobViewBinding>& job_view_bindings() {
  static const std::vector<JobViewBinding> t = [] {
    std::vector<JobViewBinding> all;
    for (auto part : {model_bindings, strategy_bindings, train_bindings})
      for (auto& b : part()) all.push_back(std::move(b));
    return all;
  }();
  return t;
}

JobView job_view(const json& job) {
  JobView v;
  for (const auto& b : job_view_bindings()) {
    const json& x = get(job, b.key);
    try {
      b.set(v, x, b.key);
    } catch (const json::exception&) {
      throw RuntimeFailure(fmt::format("the job's {} is {}, not a value of its setting's type", b.key, x.dump()),
                           "Resolve the job through the settings registry (mtrain config show), which checks "
                           "every value.");
    }
  }
  return v;
}

}  // namespace mtrain::config
