// model.name compiled (compiled_model.hpp).
#include "lib/trainer/model/compiled_model.hpp"

#include <torch/csrc/api/include/torch/version.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/visible_text.hpp"
#include "lib/trainer/checkpoint/safetensors.hpp"
#include "lib/trainer/comm/compat.hpp"
#include "lib/trainer/comm/dtype_names.hpp"
#include "lib/trainer/model/compiled_part_function.hpp"
#include "lib/trainer/model/models.hpp"

namespace mtrain::trainer {
namespace {

const char* const kCompiledTrust =
    "set model.trust_code true (--set model.trust_code=true) if you trust whoever compiled the package, or "
    "export the model yourself (mtrain export MODULE.py:FACTORY --example ... --wrap-module-types "
    "... --out DIR, docs/your-model.md)";

void require_compiled_support() {
  if (!compat::compiled_programs_supported())
    throw UsageError(
        fmt::format("model.name compiled needs an mtrain-worker built against LibTorch 2.x, and this one is "
                    "built against LibTorch {}, which cannot load AOTInductor programs (.pt2)",
                    TORCH_VERSION),
        "build mtrain against PyTorch 2.x (cmake -DMTRAIN_TORCH=python), or train the model as TorchScript "
        "(model.name torchscript) on this worker")
        .at("model.name");
}

// Where a program argument comes from, resolved once.
struct ArgSource {
  enum class Kind { Tensor, Input, Target, Hidden } kind = Kind::Tensor;
  size_t tensor = 0;  // index into CompiledModel::tensors_
};

class CompiledModel : public TaskModel {
 public:
  explicit CompiledModel(const ModelSpec& s) : spec_(s) {
    require_compiled_support();
    if (s.path.empty())
      throw UsageError("model.name is compiled but model.path is empty",
                       "set model.path (--model-path) to the folder mtrain export wrote")
          .at("model.path");
    if (!s.trust_code)
      throw UsageError(
          fmt::format("model.path: the compiled package '{}' holds native code (each program in programs/ is "
                      "a compiled shared library that runs when it is loaded), which mtrain runs only when "
                      "model.trust_code is true",
                      visible_text(s.path)),
          kCompiledTrust)
          .at("model.trust_code");
    m_ = read_compiled_manifest(s.path);
    check_compiled_target(m_, TORCH_VERSION, m_.device);
    device_ = m_.device.rfind("cuda", 0) == 0 ? at::kCUDA : at::kCPU;
    for (const CompiledInput& in : m_.inputs)
      if (in.name != "input" && in.name != "target")
        throw UsageError(fmt::format("model.path: the compiled package '{}' takes the input '{}'; the trainer feeds a "
                                     "batch's 'input' and 'target' only",
                                     visible_text(s.path), visible_text(in.name)),
                         "export the model with --example input=… --example target=… (its loss(input, target))")
            .at("model.path");
    load_tensors();
    build_stages();
    for (const CompiledPart& u : m_.units) blocks_.push_back(u.name);
    const CompiledInput* in = find_input("input");
    const CompiledInput* tg = find_input("target");
    language_model_ =
        in && tg && in->dtype == "int64" && tg->dtype == "int64" && in->shape.size() == 2 && in->shape == tg->shape;
    train(true);
  }

  at::Tensor forward(const at::Tensor&) override {
    throw RuntimeFailure(
        fmt::format("the compiled package '{}' has no program for the model's raw output, only its loss",
                    visible_text(spec_.path)));
  }

  at::Tensor loss(const Batch& b) override {
    const at::Tensor input = b.input.contiguous(), target = b.target.defined() ? b.target.contiguous() : b.target;
    at::Tensor h = run_compiled_part(*stages_.front(), gather(0, input, target, {}));
    for (size_t i = 1; i + 1 < stages_.size(); ++i) {
      std::vector<at::Tensor> args = gather(i, input, target, {});
      args.push_back(h);
      h = run_compiled_part(*stages_[i], args);
    }
    return run_compiled_part(*stages_.back(), gather(stages_.size() - 1, input, target, h));
  }

  EvalStats evaluate(const Batch& b) override {
    return evaluate_with(*this, [&] {
      EvalStats s;
      const double mean = loss(b).item<double>();
      // The package's loss is a mean over the targets it counts: cross-entropy's, which skips -100.
      s.count = language_model_ ? b.target.ne(-100).sum().item<int64_t>() : b.size();
      s.loss_sum = mean * static_cast<double>(s.count);
      return s;
    });
  }

  bool is_language_model() const override { return language_model_; }
  int64_t tokens_per_sample() const override { return language_model_ ? find_input("input")->shape[1] : 1; }
  std::vector<std::string> block_prefixes() const override { return blocks_; }

  const CompiledManifest& manifest() const { return m_; }

 private:
  const CompiledInput* find_input(const std::string& name) const {
    for (const CompiledInput& in : m_.inputs)
      if (in.name == name) return &in;
    return nullptr;
  }

  [[noreturn]] void bad(const std::string& what) const {
    throw UsageError(
        fmt::format("model.path: the compiled package '{}' is not usable: {}", visible_text(spec_.path), what),
        "export the model again with this mtrain's python/mtrain_export (docs/your-model.md)")
        .at("model.path");
  }

  // The tensor table's tensors from model.safetensors, registered under every name they have.
  void load_tensors() {
    const SafetensorsReader file(m_.dir + "/model.safetensors");
    for (const CompiledTensor& ct : m_.tensors) {
      const at::ScalarType dt = dtype_from_name(ct.dtype);
      at::Tensor t;
      if (ct.persistent) {
        const SafetensorsTensor* st = file.find(ct.name);
        if (st == nullptr) bad(fmt::format("model.safetensors has no tensor '{}'", visible_text(ct.name)));
        if (st->dtype != dt || st->shape != ct.shape)
          bad(fmt::format("model.safetensors holds '{}' as {} [{}], the manifest as {} [{}]", visible_text(ct.name),
                          dtype_name(st->dtype), str::join(dims(st->shape), "x"), ct.dtype,
                          str::join(dims(ct.shape), "x")));
        int64_t numel = 1;
        for (int64_t d : ct.shape) numel *= d;
        t = file.read(ct.name, 0, numel).reshape(ct.shape).clone();
      }
      index_[ct.name] = tensors_.size();
      for (const std::string& alias : ct.tied) index_[alias] = tensors_.size();
      tensors_.push_back(t);
      if (!t.defined()) continue;  // a non-persistent buffer: refused below if a program reads it
      std::vector<std::string> names = {ct.name};
      names.insert(names.end(), ct.tied.begin(), ct.tied.end());
      for (const std::string& name : names) {
        const size_t dot = name.rfind('.');
        torch::nn::Module& owner = dot == std::string::npos ? *this : submodule(name.substr(0, dot));
        const std::string leaf = dot == std::string::npos ? name : name.substr(dot + 1);
        if (ct.parameter) owner.register_parameter(leaf, t, ct.requires_grad);
        else owner.register_buffer(leaf, t);
      }
    }
  }

  static std::vector<std::string> dims(const std::vector<int64_t>& shape) {
    std::vector<std::string> out;
    for (int64_t d : shape) out.push_back(std::to_string(d));
    return out;
  }

  torch::nn::Module& submodule(const std::string& dotted) {
    torch::nn::Module* m = this;
    for (const std::string& part : str::split(dotted, '.')) {
      if (part.empty()) bad(fmt::format("the tensor name prefix '{}' has an empty component", visible_text(dotted)));
      std::shared_ptr<torch::nn::Module> child;
      for (const auto& c : m->named_children())
        if (c.key() == part) child = c.value();
      if (!child) child = m->register_module(part, std::make_shared<torch::nn::Module>("Module"));
      m = child.get();
    }
    return *m;
  }

  ProgramArg arg_of(const std::string& name) const {
    if (name == "hidden") return {name, dtype_from_name(m_.hidden_dtype), m_.hidden_shape};
    if (const CompiledInput* in = find_input(name)) return {name, dtype_from_name(in->dtype), in->shape};
    const CompiledTensor& ct = m_.tensors[index_.at(name)];
    return {name, dtype_from_name(ct.dtype), ct.shape};
  }

  compat::CompiledCall program(const CompiledProgram& p) {
    auto it = loaded_.find(p.file);
    if (it != loaded_.end()) return it->second;
    compat::CompiledCall call;
    try {
      call = compat::load_compiled_program(m_.dir + "/" + p.file);
    } catch (const mtrain::Error&) {
      throw;
    } catch (const std::exception& e) {
      bad(fmt::format("LibTorch cannot load its program {}: {}", visible_text(p.file), visible_text(e.what())));
    }
    return loaded_[p.file] = call;
  }

  void build_stages() {
    using Kind = CompiledStage::Kind;
    std::vector<std::pair<const CompiledPart*, Kind>> parts = {{&m_.prologue, Kind::Prologue}};
    for (const CompiledPart& u : m_.units) parts.emplace_back(&u, Kind::Unit);
    parts.emplace_back(&m_.epilogue, Kind::Epilogue);
    for (const auto& [part, kind] : parts) {
      const std::string label = kind == Kind::Unit ? "unit " + part->name : part->name;
      std::vector<ProgramArg> args;
      std::vector<ArgSource> sources;
      for (const std::string& a : part->args) {
        args.push_back(arg_of(a));
        ArgSource src;
        if (a == "hidden") {
          src.kind = ArgSource::Kind::Hidden;
        } else if (a == "input" || a == "target") {
          src.kind = a == "input" ? ArgSource::Kind::Input : ArgSource::Kind::Target;
        } else {
          src.tensor = index_.at(a);
          if (!tensors_[src.tensor].defined())
            bad(fmt::format("its {} reads the non-persistent buffer '{}', whose values the package does not hold",
                            label, visible_text(a)));
        }
        sources.push_back(src);
      }
      // By name only the epilogue takes it, once (a unit's comes last, unnamed).
      const auto hidden_args = std::count(part->args.begin(), part->args.end(), "hidden");
      if (hidden_args != (kind == Kind::Epilogue ? 1 : 0))
        bad(fmt::format("its {} names the hidden state {} times among its arguments", label, hidden_args));
      std::vector<ProgramArg> fwd_args = args;
      if (kind == Kind::Unit) fwd_args.push_back(arg_of("hidden"));
      std::vector<ProgramArg> bwd_args = fwd_args;
      for (size_t j = 0; j < part->saved.size(); ++j)
        bwd_args.push_back({fmt::format("saved[{}]", j), dtype_from_name(part->saved[j].dtype), part->saved[j].shape});
      if (kind != Kind::Epilogue) bwd_args.push_back({"grad", dtype_from_name(m_.hidden_dtype), m_.hidden_shape});
      const size_t lead = kind == Kind::Prologue ? 0 : kind == Kind::Unit ? 1 : 2;
      // Each input's gradient: the first input that is a table tensor named in grads (a tensor
      // passed twice gets its gradient once), and the hidden state's.
      std::vector<size_t> grad_of(fwd_args.size(), CompiledStage::kNoGrad);
      std::set<size_t> seen;
      for (size_t j = 0; j < part->grads.size(); ++j) {
        const size_t t = index_.at(part->grads[j]);
        bool found = false;
        for (size_t i = 0; i < sources.size() && !found; ++i)
          if (sources[i].kind == ArgSource::Kind::Tensor && sources[i].tensor == t && seen.insert(t).second) {
            grad_of[i] = lead + j;
            found = true;
          }
        if (!found)
          bad(fmt::format("its {} returns a gradient for '{}', which it does not take (or names twice)", label,
                          visible_text(part->grads[j])));
      }
      if (kind == Kind::Unit) grad_of.back() = 0;
      if (kind == Kind::Epilogue)
        grad_of[std::find(part->args.begin(), part->args.end(), "hidden") - part->args.begin()] = 1;
      const std::string bwd_name = kind == Kind::Epilogue ? "step" : "backward";
      stages_.push_back(std::make_unique<CompiledStage>(CompiledStage{
          kind, label,
          LoadedProgram(program(part->forward), m_.dir, part->forward.file, "the forward of the " + label, fwd_args,
                        1 + part->saved.size(), device_),
          LoadedProgram(program(part->backward), m_.dir, part->backward.file,
                        fmt::format("the {} of the {}", bwd_name, label), bwd_args, lead + part->grads.size(), device_),
          grad_of}));
      sources_.push_back(std::move(sources));
    }
  }

  // The arguments of stage i (without a unit's hidden state, which the caller appends).
  std::vector<at::Tensor> gather(size_t i, const at::Tensor& input, const at::Tensor& target,
                                 const at::Tensor& hidden) {
    std::vector<at::Tensor> out;
    out.reserve(sources_[i].size() + 1);
    for (const ArgSource& s : sources_[i]) {
      switch (s.kind) {
        case ArgSource::Kind::Tensor: out.push_back(tensors_[s.tensor]); break;
        case ArgSource::Kind::Input: out.push_back(input); break;
        case ArgSource::Kind::Target: out.push_back(target); break;
        case ArgSource::Kind::Hidden: out.push_back(hidden); break;
      }
    }
    return out;
  }

  ModelSpec spec_;
  CompiledManifest m_;
  at::DeviceType device_ = at::kCPU;
  std::vector<at::Tensor> tensors_;  // per table entry (undefined: a non-persistent buffer)
  std::map<std::string, size_t> index_;  // every name (tied ones too) → tensors_
  std::map<std::string, compat::CompiledCall> loaded_;  // by file: equal blocks share one program
  std::vector<std::unique_ptr<CompiledStage>> stages_;  // prologue, units, epilogue
  std::vector<std::vector<ArgSource>> sources_;
  std::vector<std::string> blocks_;
  bool language_model_ = false;
};

}  // namespace

std::shared_ptr<TaskModel> make_compiled(const ModelSpec& spec) { return std::make_shared<CompiledModel>(spec); }

bool is_compiled_model(const TaskModel& model) { return dynamic_cast<const CompiledModel*>(&model) != nullptr; }

std::vector<NamedShape> compiled_layout(const CompiledManifest& m) {
  std::vector<NamedShape> out;
  for (bool buffers : {false, true})
    for (const CompiledTensor& t : m.tensors) {
      if (t.parameter == buffers || !t.persistent) continue;
      out.push_back({t.name, t.shape, buffers});
      for (const std::string& alias : t.tied) out.push_back({alias, t.shape, buffers, t.name});
    }
  return out;
}

void check_compiled_package(const std::string& dir, const std::string& init, bool init_strict) {
  require_compiled_support();
  const CompiledManifest m = read_compiled_manifest(dir);
  check_compiled_target(m, TORCH_VERSION, m.device);
  if (!init.empty()) check_init_weights({init, init_strict}, compiled_layout(m));
}

}  // namespace mtrain::trainer
