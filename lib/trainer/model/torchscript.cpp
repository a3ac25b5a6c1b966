// torchscript: the user's own model, a `torch.jit.save` of a `torch.jit.script`ed nn.Module.
//
// How a TorchScript module trains under strategies written for torch::nn::Module: the model
// exposes a MIRROR tree of plain nn::Modules, one per jit submodule (same dotted names), whose
// parameters and buffers are registered with the very at::Tensor objects (the same TensorImpl)
// that sit in the jit module's attribute slots. Whatever a strategy does to a parameter in place
// — set_data onto a view of a flat buffer (the sharded engine), .to(device), .grad — the jit
// interpreter sees, because it reads the same impl through prim::GetAttr. The interpreter runs
// ATen operators through the dispatcher, so the sharded engine's gather-on-use callback
// (sharded_engine.hpp) sees every parameter use as it does for the built-in models. The graph
// executor's optimisations are switched off (setGraphExecutorOptimize(false)): the profiling
// executor would otherwise build differentiable sub-graphs and fusion groups whose kernels are not
// ATen operator calls; plain op-by-op interpretation keeps the protocol exact.
//
// Names are PyTorch's state_dict names ("blocks.0.attn.weight") in PyTorch's named_parameters()
// order (a module's own parameters, then its children in registration order, pre-order), so
// model.pt loads with load_state_dict. The initial weights are the file's (the same on every
// rank; the seed is not used). train()/eval() switch the jit module's `training` flags together
// with the mirror's. A traced model whose dropout/BatchNorm mode the trace froze validates with
// model.eval_path, the eval-mode trace of the same module bound to the same tensors
// (trace_pair.hpp). Units (fsdp wrap_policy layer): the submodules whose class name (TorchScript's
// `__torch__.` path and `___torch_mangle_N` stripped) or dotted name is listed in
// model.wrap_module_types, outermost match only.
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/torchscript_archive.hpp"
#include "lib/core/torchscript_trust.hpp"
#include "lib/core/worker_facts.hpp"
#include "lib/trainer/comm/dtype_names.hpp"
#include "lib/trainer/comm/exception_text.hpp"
#include "lib/trainer/model/load_failure.hpp"
#include "lib/trainer/model/models.hpp"
#include "lib/trainer/model/scripted_recompute.hpp"
#include "lib/trainer/model/torchscript.hpp"
#include "lib/trainer/model/torchscript_code_check.hpp"
#include "lib/trainer/model/trace_pair.hpp"
#include "lib/trainer/model/traced_module.hpp"
#include "lib/trainer/strategy/wrap_policy.hpp"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/csrc/jit/serialization/import.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

namespace mtrain::trainer {
namespace {

namespace fs = std::filesystem;

const char* const kExport =
    "export it with torch.jit.save(torch.jit.script(model), PATH) from the nn.Module in train "
    "mode, before any torch.jit.freeze";

// "__torch__.mymodel.___torch_mangle_3.Block" → "Block".
std::string plain_class_name(const torch::jit::Module& m) {
  std::string q = m.type()->name() ? m.type()->name()->qualifiedName() : std::string("Module");
  std::vector<std::string> parts = str::split(q, '.');
  std::vector<std::string> kept;
  for (const auto& p : parts)
    if (p != "__torch__" && p.rfind("___torch_mangle_", 0) != 0) kept.push_back(p);
  return kept.empty() ? q : kept.back();
}

std::string schema_text(const torch::jit::Module& m, const std::string& method) {
  std::ostringstream s;
  s << m.get_method(method).function().getSchema();
  return s.str();
}

// (self, Tensor × n_tensors) -> Tensor.
bool takes_tensors_returns_tensor(const torch::jit::Module& m, const std::string& method,
                                  size_t n_tensors) {
  const auto& schema = m.get_method(method).function().getSchema();
  const auto& args = schema.arguments();
  size_t required = 0;
  for (size_t i = 1; i < args.size(); ++i)
    if (!args[i].default_value()) ++required;
  if (args.size() < 1 + n_tensors || required != n_tensors) return false;
  for (size_t i = 1; i <= n_tensors; ++i)
    if (!args[i].type()->isSubtypeOf(*c10::TensorType::get())) return false;
  return schema.returns().size() == 1 &&
         schema.returns()[0].type()->isSubtypeOf(*c10::TensorType::get());
}

// One plain nn::Module per jit submodule, holding the jit module's own tensors.
void mirror(torch::nn::Module& dst, const torch::jit::Module& src) {
  for (const auto& p : src.named_parameters(/*recurse=*/false))
    dst.register_parameter(p.name, p.value, p.value.requires_grad());
  for (const auto& b : src.named_buffers(/*recurse=*/false)) dst.register_buffer(b.name, b.value);
  for (const auto& c : src.named_children()) {
    auto sub = std::make_shared<torch::nn::Module>(plain_class_name(c.value));
    mirror(*sub, c.value);
    dst.register_module(c.name, sub);
  }
}

void collect_blocks(const torch::jit::Module& m, const std::string& prefix,
                    const std::set<std::string>& wanted, std::vector<std::string>& out) {
  for (const auto& c : m.named_children()) {
    const std::string name = prefix.empty() ? c.name : prefix + "." + c.name;
    if (wanted.count(plain_class_name(c.value)) > 0 || wanted.count(name) > 0) {
      out.push_back(name);  // outermost match: its own children are inside the unit
    } else {
      collect_blocks(c.value, name, wanted, out);
    }
  }
}

class ScriptedModel : public TaskModel {
 public:
  ScriptedModel(torch::jit::Module m, std::optional<torch::jit::Module> eval, const ModelSpec& s, bool own_loss,
                bool traced)
      : module_(std::move(m)), eval_(std::move(eval)), spec_(s), own_loss_(own_loss), traced_(traced) {
    if (eval_) {
      bind_eval_trace(*eval_, module_);
      eval_->train(false);  // for good: it runs in validation only
    }
    spec_.language_model = s.language_model || s.loss == config::LossName::LmCrossEntropy;
    mirror(*this, module_);
    std::set<std::string> wanted;
    for (const auto& t : str::split(s.wrap_module_types, ','))
      if (!str::trim(t).empty()) wanted.insert(str::trim(t));
    if (!wanted.empty()) {
      collect_blocks(module_, "", wanted, blocks_);
      if (blocks_.empty()) {
        std::vector<std::string> classes;
        for (const auto& [name, n] : submodule_classes(module_)) classes.push_back(name);
        throw UsageError(fmt::format("fsdp.wrap_module_types '{}' matches no submodule of TorchScript "
                                     "model '{}'",
                                     s.wrap_module_types, s.path),
                         fmt::format("its submodule classes are: {} (or give dotted submodule names "
                                     "such as blocks.0)",
                                     str::join(classes, ", ")))
            .at("fsdp.wrap_module_types");
      }
    }
    // The call sites are rewritten only for a job that checkpoints: other jobs run the
    // user's graphs exactly as saved.
    const std::vector<std::string> recomputed =
        s.activation_checkpointing ? checkpoint_blocks(s) : std::vector<std::string>{};
    if (!recomputed.empty()) {
      std::vector<RecomputedBlock> rb;
      auto mirrors = named_modules("", /*include_self=*/false);
      for (const auto& name : recomputed) {
        torch::jit::Module sub = module_;
        for (const auto& part : str::split(name, '.')) sub = sub.attr(part).toModule();
        rb.push_back({sub, mirrors[name]});
      }
      recompute_ = std::make_unique<ScriptedRecompute>(module_, std::move(rb),
                                                       [this] { return recompute_now(); });
    }
    train(true);
  }

  void train(bool on = true) override {
    torch::nn::Module::train(on);
    module_.train(on);
  }

  at::Tensor forward(const at::Tensor& input) override {
    reject_recompute();
    return as_tensor(run("forward", {input}), "forward");
  }

  at::Tensor loss(const Batch& b) override {
    reject_recompute();
    if (own_loss_) return as_tensor(run("loss", {b.input, b.target}), "loss");
    const at::Tensor out = forward(b.input);
    return reported(builtin_loss_name(), {b.input, b.target}, [&] { return builtin_loss(out, b.target); });
  }

  EvalStats evaluate(const Batch& b) override {
    // The eval-mode trace when there is one (its tensors are module_'s), else the module itself.
    torch::jit::Module& m = eval_ ? *eval_ : module_;
    return evaluate_with(*this, [&] {
      EvalStats s;
      const at::Tensor out = as_tensor(run(m, "forward", {b.input}), "forward");
      const bool classes = out.dim() == b.target.dim() + 1 && !at::isFloatingType(b.target.scalar_type());
      if (own_loss_ || spec_.loss == config::LossName::Mse) {
        const at::Tensor l =
            own_loss_ ? as_tensor(run(m, "loss", {b.input, b.target}), "loss")
                      : reported(builtin_loss_name(), {b.input, b.target}, [&] { return builtin_loss(out, b.target); });
        s.count = classes ? b.target.numel() : b.size();
        s.loss_sum = l.item<double>() * static_cast<double>(s.count);
        if (classes) s.correct = out.argmax(-1).eq(b.target).sum().item<int64_t>();
        return s;
      }
      return reported(builtin_loss_name(), {b.input, b.target},
                      [&] { return classifier_stats(out.reshape({-1, out.size(-1)}), class_ids(b.target)); });
    });
  }

  bool is_language_model() const override { return spec_.language_model; }
  int64_t tokens_per_sample() const override { return spec_.language_model ? spec_.block_size : 1; }
  std::vector<std::string> block_prefixes() const override { return blocks_; }

  // The user's module with `weights` in place of its parameters, saved with torch.jit.save's
  // format; the live parameters are put back afterwards.
  void save_scripted(const std::vector<std::pair<std::string, at::Tensor>>& weights,
                     std::ostream& out) {
    std::vector<std::tuple<torch::jit::Module, std::string, at::Tensor>> undo;
    auto restore = [&] {
      for (auto& [owner, attr, old] : undo) owner.setattr(attr, old);
    };
    try {
      for (const auto& [name, t] : weights) {
        const auto dot = name.rfind('.');
        torch::jit::Module owner = module_;
        if (dot != std::string::npos)
          for (const auto& part : str::split(name.substr(0, dot), '.'))
            owner = owner.attr(part).toModule();
        const std::string attr = dot == std::string::npos ? name : name.substr(dot + 1);
        const at::Tensor old = owner.attr(attr).toTensor();
        undo.emplace_back(owner, attr, old);
        owner.setattr(attr, t.detach().to(at::kCPU).requires_grad_(old.requires_grad()));
      }
      const bool was_training = is_training();
      module_.train(true);  // as exported: the user calls .eval() when they want it
      if (recompute_)
        recompute_->with_plain_calls([&] { module_.save(out); });
      else
        module_.save(out);
      module_.train(was_training);
    } catch (...) {
      restore();
      throw;
    }
    restore();
  }

  const torch::jit::Module& module() const { return module_; }

 private:
  // The submodules activation checkpointing recomputes: the blocks (fsdp.wrap_module_types),
  // else with fsdp.wrap_policy size the subtrees FSDP would wrap by size.
  std::vector<std::string> checkpoint_blocks(const ModelSpec& s) {
    if (!blocks_.empty() || s.wrap_policy != config::WrapPolicy::Size) return blocks_;
    ParamList p;
    for (const auto& np : named_parameters()) {
      p.names.push_back(np.key());
      p.numels.push_back(np.value().numel());
    }
    std::vector<std::string> out;
    for (const auto& u : fsdp_units(p, config::WrapPolicy::Size, {}, s.min_num_params))
      if (!u.pinned) out.push_back(u.label);
    return out;
  }

  void reject_recompute() const {
    if (!activation_checkpointing() || (recompute_ && recompute_->call_sites() > 0)) return;
    throw UsageError(fmt::format("fsdp.activation_checkpointing is on but no submodule of the "
                                 "TorchScript model '{}' is {}",
                                 spec_.path,
                                 recompute_ ? "called as block(x) with one Tensor in and one out, so "
                                              "none can be recomputed"
                                            : "selected for recomputing"),
                     recompute_ ? "checkpoint blocks whose forward takes and returns one Tensor (name "
                                  "their class or dotted name in fsdp.wrap_module_types), or turn "
                                  "fsdp.activation_checkpointing off"
                                : "name the blocks in fsdp.wrap_module_types (class name such as Block, "
                                  "or dotted names such as blocks.0), or use fsdp.wrap_policy size")
        .at("fsdp.activation_checkpointing");
  }

  c10::IValue run(const std::string& method, const std::vector<c10::IValue>& args) {
    return run(module_, method, args);
  }
  c10::IValue run(torch::jit::Module& m, const std::string& method, const std::vector<c10::IValue>& args) {
    const std::string what =
        &m == &module_ ? method + "()"
                       : fmt::format("{}() of the eval-mode trace, model.eval_path '{}',", method, spec_.eval_path);
    return reported(what, args, [&] { return m.get_method(method)(args); });
  }

  // `fn` (a call of the user's code, or the built-in loss on its output); a failure becomes one
  // paragraph: PyTorch's own error first, the TorchScript lines it points at, what went in (shape
  // and dtype), then the hint. The C++ backtrace goes to the rank's stderr alone, which the launcher
  // keeps in the rank's log and folds to one line on the console (launch/stderr_tail.hpp).
  template <class Fn>
  auto reported(const std::string& what, const std::vector<c10::IValue>& args, Fn&& fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const mtrain::Error&) {
      throw;
    } catch (const std::exception& e) {
      if (const std::string bt = backtrace_of(e.what()); !bt.empty()) std::cerr << bt << std::endl;
      const ScriptError pe = script_error(e);
      std::string message = fmt::format("the TorchScript model '{}' failed in {}: {}", spec_.path, what, pe.error);
      for (const auto& l : pe.traceback) message += "\n  " + l;
      std::vector<std::string> in;
      const char* names[] = {"input", "target"};
      for (std::size_t i = 0; i < args.size() && i < 2; ++i)
        if (args[i].isTensor())
          in.push_back(fmt::format("{} {} {}", names[i], dtype_name(args[i].toTensor().scalar_type()),
                                   shape_of(args[i].toTensor())));
      message += fmt::format("\n  {}", in.empty() ? std::string("no tensor input") : str::join(in, ", "));
      throw UsageError(message, traced_ ? fmt::format("'{}' was made by torch.jit.trace, which froze the example "
                                                      "input's shapes and control flow into the file: export it "
                                                      "with torch.jit.save(torch.jit.script(model), PATH) instead "
                                                      "(and check that the data matches what the model expects)",
                                                      spec_.path)
                                        : "check that the data matches what the model expects: the input's shape and "
                                          "dtype (float32 for a float model: torch.save the tensors with .float()), "
                                          "class ids as int64 in [0, classes) for cross-entropy; a module made with "
                                          "torch.jit.trace has the example input's shapes and control flow frozen in "
                                          "— use torch.jit.script for a model with data-dependent control flow or "
                                          "varying shapes")
          .at("model.path");
    }
  }

  at::Tensor as_tensor(const c10::IValue& v, const char* method) const {
    if (!v.isTensor())
      throw UsageError(
          fmt::format("the TorchScript model '{}': {}() returned {}, not a Tensor", spec_.path, method, v.tagKind()),
          "return a single Tensor (the logits, or the scalar loss)")
          .at("model.path");
    return v.toTensor();
  }

  std::string builtin_loss_name() const {
    return fmt::format("model.loss {} on forward()'s output", config::to_string(spec_.loss));
  }

  at::Tensor builtin_loss(const at::Tensor& out, const at::Tensor& target) const {
    if (spec_.loss == config::LossName::Mse) return at::mse_loss(out, target.to(out.scalar_type()));
    if (spec_.loss == config::LossName::LmCrossEntropy) {
      if (out.dim() != 3 || target.dim() != 2)
        throw UsageError(fmt::format("model.loss lm_cross_entropy needs logits [B, T, V] and targets "
                                     "[B, T]; the model returned {} for targets {}",
                                     shape_of(out), shape_of(target)),
                         "use cross_entropy for logits [B, C], or return [B, T, V] from forward")
            .at("model.loss");
    } else if (out.dim() != 2 || target.dim() != 1) {
      throw UsageError(fmt::format("model.loss cross_entropy needs logits [B, C] and class targets [B]; "
                                   "the model returned {} for targets {}",
                                   shape_of(out), shape_of(target)),
                       "use lm_cross_entropy for [B, T, V] logits, mse for regression, or give the "
                       "module a loss(input, target) method")
          .at("model.loss");
    }
    return cross_entropy(out.reshape({-1, out.size(-1)}), class_ids(target));
  }

  // Cross-entropy's targets are class ids. Float targets (regression values, one-hot rows, a
  // dataset saved with the wrong dtype) were cast to integers, silently training on truncated
  // labels; PyTorch's F.cross_entropy refuses them too.
  at::Tensor class_ids(const at::Tensor& target) const {
    if (at::isFloatingType(target.scalar_type()) || at::isComplexType(target.scalar_type()))
      throw UsageError(fmt::format("model.loss {} needs integer class ids as targets; the data's targets are {} "
                                   "(a float tensor would be truncated to class ids)",
                                   config::to_string(spec_.loss), c10::toString(target.scalar_type())),
                       "save the targets as integers (torch.long) for classification, or use model.loss mse "
                       "for regression targets")
          .at("model.loss");
    return target.reshape({-1}).to(at::kLong);
  }

  torch::jit::Module module_;
  std::optional<torch::jit::Module> eval_;  // model.eval_path, bound to module_'s tensors
  ModelSpec spec_;
  bool own_loss_;
  bool traced_;
  std::vector<std::string> blocks_;
  std::unique_ptr<ScriptedRecompute> recompute_;  // after module_: unregisters before it goes
};

}  // namespace

namespace {

// The file at `path` (the setting `key`: model.path or model.eval_path), checked as the trainer
// needs it: parsed, never run, before LibTorch loads it (loading runs the file's __setstate__
// code, torchscript_code_check.hpp; a trusted file is not parsed: LibTorch reports its own
// errors), then trainable, forward(Tensor) -> Tensor and an optional loss(Tensor, Tensor) -> Tensor.
torch::jit::Module load_checked(const std::string& path, const char* key, const ModelSpec& s) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw UsageError(fmt::format("TorchScript model file '{}' does not exist or is not a file", path),
                     fmt::format("check {}; {}", key, kExport))
        .at(key);
  const TorchScriptArchive archive = read_torchscript_archive(path);
  if (!s.trust_code) check_torchscript_trust(path, check_torchscript_code(archive.code).findings, false);
  torch::jit::Module m;
  try {
    m = torch::jit::load(path, at::kCPU);
  } catch (const std::exception& e) {  // c10::Error, and torch::jit::ErrorReport (a std::exception)
    throw torchscript_load_failure(path, e.what(), own_worker_facts());
  }
  if (m.named_parameters().size() == 0)
    throw UsageError(fmt::format("the TorchScript model '{}' has no parameters: a frozen module "
                                 "(torch.jit.freeze, optimize_for_inference) keeps its weights as "
                                 "constants, which cannot be trained",
                                 path),
                     fmt::format("save the module before freezing it: {}", kExport))
        .at(key);
  bool trainable = false;
  for (const auto& p : m.named_parameters()) trainable = trainable || p.value.requires_grad();
  if (!trainable || !m.hasattr("training"))
    throw UsageError(fmt::format("the TorchScript model '{}' is inference-only: {}", path,
                                 !trainable ? "none of its parameters requires grad"
                                            : "it has no `training` attribute (it was frozen or "
                                              "optimized for inference)"),
                     fmt::format("export the trainable module instead: {}", kExport))
        .at(key);
  if (!m.find_method("forward") || !takes_tensors_returns_tensor(m, "forward", 1))
    throw UsageError(fmt::format("the TorchScript model '{}' has forward {}; the trainer needs "
                                 "forward(self, x: Tensor) -> Tensor",
                                 path, m.find_method("forward") ? schema_text(m, "forward") : "missing"),
                     "wrap the model in an nn.Module whose forward takes one Tensor and returns one "
                     "Tensor (unpack tuples/dicts inside it), then script and save that")
        .at(key);
  if (m.find_method("loss") && !takes_tensors_returns_tensor(m, "loss", 2))
    throw UsageError(fmt::format("the TorchScript model '{}' has loss {}; the trainer needs "
                                 "loss(self, input: Tensor, target: Tensor) -> Tensor",
                                 path, schema_text(m, "loss")),
                     "mark the method @torch.jit.export with that signature, or remove it and set "
                     "model.loss")
        .at(key);
  return m;
}

}  // namespace

std::shared_ptr<TaskModel> make_torchscript(const ModelSpec& s) {
  if (s.path.empty())
    throw UsageError("model.name is torchscript but model.path is empty",
                     fmt::format("set model.path (--model-path) to the file; {}", kExport))
        .at("model.path");
  torch::jit::Module m = load_checked(s.path, "model.path", s);
  // Plain op-by-op interpretation (see the header comment). Thread-local in LibTorch: set on
  // the thread that builds the model, which is the one that trains it.
  torch::jit::setGraphExecutorOptimize(false);
  if (s.loss == config::LossName::Auto && !m.find_method("loss"))
    throw UsageError(fmt::format("the TorchScript model '{}' has no loss(input, target) method and "
                                 "model.loss is auto",
                                 s.path),
                     "set model.loss to cross_entropy (logits [B, C]), lm_cross_entropy (logits "
                     "[B, T, V]) or mse, or add `@torch.jit.export def loss(self, input: Tensor, "
                     "target: Tensor) -> Tensor` to the module")
        .at("model.loss");
  // A trace froze each dropout/BatchNorm layer's mode: one file would run both phases in the
  // mode it was traced in (BatchNorm updating its statistics in validation, or dropout never
  // applied), silently; with model.eval_path the pair runs each phase in its own mode. Other
  // traced modules train (dropout with p = 0 included: the identity in both modes); a shape the
  // trace froze fails loudly.
  const TraceFacts trace = trace_facts(m);
  std::optional<torch::jit::Module> eval;
  if (!s.eval_path.empty()) {
    eval = load_checked(s.eval_path, "model.eval_path", s);
    const ModelFile eval_file{s.eval_path, *eval, trace_facts(*eval)};
    check_trace_pair({s.path, m, trace}, &eval_file);
  } else {
    check_trace_pair({s.path, m, trace}, nullptr);
  }
  return std::make_shared<ScriptedModel>(std::move(m), std::move(eval), s, s.loss == config::LossName::Auto,
                                         trace.traced);
}

void save_scripted_model(TaskModel& model,
                         const std::vector<std::pair<std::string, at::Tensor>>& weights,
                         std::ostream& out) {
  auto* sm = dynamic_cast<ScriptedModel*>(&model);
  if (sm == nullptr) throw RuntimeFailure("save_scripted_model: not a TorchScript model", "");
  sm->save_scripted(weights, out);
}

bool is_scripted_model(const TaskModel& model) {
  return dynamic_cast<const ScriptedModel*>(&model) != nullptr;
}

std::map<std::string, int> submodule_classes(const torch::jit::Module& module) {
  std::map<std::string, int> out;
  for (const auto& m : module.named_modules()) {
    if (m.name.empty()) continue;  // the root: not a unit FSDP could wrap
    ++out[plain_class_name(m.value)];
  }
  return out;
}

std::map<std::string, int> submodule_classes(const TaskModel& model) {
  const auto* scripted = dynamic_cast<const ScriptedModel*>(&model);
  return scripted ? submodule_classes(scripted->module()) : std::map<std::string, int>{};
}

}  // namespace mtrain::trainer
