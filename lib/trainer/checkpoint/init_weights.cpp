#include "lib/trainer/checkpoint/init_weights.hpp"

#include "lib/trainer/checkpoint/manifest.hpp"

#include <ATen/core/grad_mode.h>

#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/trainer/checkpoint/weights_file.hpp"
#include "lib/trainer/strategy/strategy.hpp"

namespace mtrain::trainer {

namespace {


std::string init_shape_text(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// The file's tensors the match accepted, under the "model/<name>" names strategies look up,
// as fp32 (floating) or int64 (integer) — the TensorSource contract.
class InitSource final : public TensorSource {
 public:
  InitSource(const WeightsFile& f, std::set<std::string> names, std::map<std::string, std::string> file_name)
      : f_(f), names_(std::move(names)), file_name_(std::move(file_name)) {
    for (const auto& e : f_.entries()) shapes_[e.name] = e.shape;
  }
  bool has(const std::string& name) const override { return names_.count(strip(name)) > 0; }
  std::vector<int64_t> shape(const std::string& name) const override { return shapes_.at(in_file(name)); }
  at::Tensor read(const std::string& name, int64_t offset, int64_t numel) const override {
    at::Tensor t = f_.read(in_file(name), offset, numel);
    return t.to(at::isFloatingType(t.scalar_type()) ? at::kFloat : at::kLong);
  }

 private:
  static std::string strip(const std::string& name) {
    return name.rfind(kModelPrefix, 0) == 0 ? name.substr(kModelPrefix.size()) : std::string();
  }
  std::string in_file(const std::string& name) const {
    const std::string n = strip(name);
    const auto it = file_name_.find(n);
    return it == file_name_.end() ? n : it->second;
  }
  const WeightsFile& f_;
  std::set<std::string> names_;
  std::map<std::string, std::string> file_name_;
  std::map<std::string, std::vector<int64_t>> shapes_;
};

}  // namespace

std::vector<NamedShape> model_layout(const torch::nn::Module& model) {
  std::vector<NamedShape> out;
  std::map<const void*, std::string> first;  // a TensorImpl's first name: a tied tensor is one impl
  for (const auto& p : model.named_parameters(/*recurse=*/true)) {
    const auto [it, fresh] = first.emplace(p.value().unsafeGetTensorImpl(), p.key());
    out.push_back({p.key(), p.value().sizes().vec(), false, fresh ? std::string() : it->second});
  }
  for (const auto& b : model.named_buffers(/*recurse=*/true)) out.push_back({b.key(), b.value().sizes().vec(), true});
  return out;
}

InitMatch match_init(const std::vector<NamedShape>& model, const std::vector<NamedShape>& file) {
  std::map<std::string, const NamedShape*> in_file;
  for (const auto& f : file) in_file[f.name] = &f;
  std::set<std::string> in_model;
  InitMatch m;
  for (const auto& p : model) {
    if (!in_model.insert(p.name).second) continue;
    auto it = in_file.find(p.name);
    if (it == in_file.end()) {
      (p.buffer ? m.missing_buffers : m.missing).push_back(p);
    } else if (it->second->shape != p.shape) {
      m.wrong_shape.push_back({p.name, p.shape, it->second->shape});
    } else {
      m.matched.push_back(p.name);
    }
  }
  for (const auto& f : file)
    if (!in_model.count(f.name)) m.unexpected.push_back(f);
  // Tied names: the group is loaded when any one of its names is in the file (with its shape).
  std::map<std::string, std::string> group_source;  // first name → a matched name of its group
  std::set<std::string> matched(m.matched.begin(), m.matched.end());
  for (const auto& p : model) {
    const std::string& head = p.tied_to.empty() ? p.name : p.tied_to;
    if (matched.count(p.name) && !group_source.count(head)) group_source[head] = p.name;
  }
  std::vector<NamedShape> still_missing;
  for (const auto& p : m.missing) {
    const std::string& head = p.tied_to.empty() ? p.name : p.tied_to;
    const auto src = group_source.find(head);
    if (src == group_source.end()) {
      still_missing.push_back(p);
      continue;
    }
    m.tied.push_back(p.name);
    if (p.tied_to.empty()) {  // the group's first name, which strategies load: from its twin
      m.matched.push_back(p.name);
      m.file_name[p.name] = src->second;
    }
  }
  m.missing = std::move(still_missing);
  return m;
}

std::string wrapper_prefix_to_add(const std::vector<NamedShape>& model, const std::vector<NamedShape>& file) {
  if (model.empty()) return "";
  const std::string& n0 = model.front().name;
  const auto dot = n0.find('.');
  if (dot == std::string::npos) return "";
  const std::string prefix = n0.substr(0, dot + 1);
  for (const auto& p : model)
    if (p.name.rfind(prefix, 0) != 0) return "";
  std::set<std::string> names;
  for (const auto& p : model) names.insert(p.name);
  size_t as_is = 0, prefixed = 0;
  for (const auto& f : file) {
    as_is += names.count(f.name);
    prefixed += names.count(prefix + f.name);
  }
  return prefixed > as_is ? prefix : "";
}

std::string format_init_mismatch(const InitMatch& m, size_t max_rows) {
  struct Row {
    std::string problem, name, model, file;
  };
  std::vector<Row> rows;
  for (const auto& x : m.missing) rows.push_back({"missing", x.name, init_shape_text(x.shape), "-"});
  for (const auto& x : m.unexpected) rows.push_back({"unexpected", x.name, "-", init_shape_text(x.shape)});
  for (const auto& x : m.wrong_shape) rows.push_back({"wrong shape", x.name, init_shape_text(x.model), init_shape_text(x.file)});
  size_t w = 6;
  for (size_t i = 0; i < rows.size() && i < max_rows; ++i) w = std::max(w, rows[i].name.size());
  std::string out = fmt::format("  {:<12} {:<{}} {:<18} {}\n", "problem", "tensor", w, "model shape", "file shape");
  for (size_t i = 0; i < rows.size() && i < max_rows; ++i) {
    out += fmt::format("  {:<12} {:<{}} {:<18} {}\n", rows[i].problem, rows[i].name, w, rows[i].model, rows[i].file);
  }
  if (rows.size() > max_rows) out += fmt::format("  ... and {} more\n", rows.size() - max_rows);
  return out;
}

InitPlan check_init_weights(const InitOptions& o, const std::vector<NamedShape>& layout) {
  std::shared_ptr<const WeightsFile> file = open_weights_file(o.path);
  std::vector<NamedShape> file_layout;
  for (const auto& e : file->entries()) file_layout.push_back({e.name, e.shape});
  // A Hugging Face file names the tensors without the wrapper module's attribute: added back.
  const std::string added = wrapper_prefix_to_add(layout, file_layout);
  std::map<std::string, std::string> stored_as;  // the name in the model → the file's
  for (auto& f : file_layout) {
    if (added.empty()) break;
    stored_as[added + f.name] = f.name;
    f.name = added + f.name;
  }
  InitMatch m = match_init(layout, file_layout);
  for (const auto& name : m.matched) {
    const auto via = m.file_name.count(name) ? m.file_name.at(name) : name;
    if (stored_as.count(via)) m.file_name[name] = stored_as.at(via);
  }
  const std::string counts =
      fmt::format("{} missing from the file, {} unexpected, {} with the wrong shape; {} of the model's {} "
                  "tensors match", m.missing.size(), m.unexpected.size(), m.wrong_shape.size(),
                  m.matched.size(),
                  m.matched.size() + m.missing.size() + m.wrong_shape.size() + m.missing_buffers.size());
  if (m.matched.empty()) {
    throw UsageError(fmt::format("model.init {} ({}) shares no tensor with the model: {}\n{}", o.path, file->format(),
                                 counts, format_init_mismatch(m)),
                     "check that the file holds weights of this model (same model.* settings, parameter "
                     "names as model.state_dict() lists them)");
  }
  if (!m.exact() && o.strict) {
    throw UsageError(fmt::format("model.init {} ({}) does not match the model: {}\n{}", o.path, file->format(), counts,
                                 format_init_mismatch(m)),
                     "fix the model.* settings or the file; or set model.init_strict: false to load the "
                     "tensors that match (the others keep their initial values)");
  }
  InitPlan plan;
  InitReport& r = plan.report;
  r.format = file->format();
  r.loaded = m.matched.size();
  r.model_tensors = m.matched.size() + m.missing.size() + m.wrong_shape.size() + m.missing_buffers.size();
  if (!file->note().empty()) r.notices.push_back(fmt::format("model.init {}: {}", o.path, file->note()));
  if (!added.empty()) {
    r.notices.push_back(fmt::format("model.init {}: the file's names are the model's without its "
                                    "wrapper's '{}' (a Hugging Face file): read with it added back",
                                    o.path, added));
  }
  if (!m.tied.empty()) {
    r.notices.push_back(fmt::format("model.init {}: tied to a tensor the file holds, so loaded from it: {}",
                                    o.path, fmt::join(m.tied, ", ")));
  }
  if (!m.missing_buffers.empty()) {
    std::vector<std::string> names;
    for (const auto& b : m.missing_buffers) names.push_back(b.name);
    r.notices.push_back(fmt::format("model.init {}: {} buffer(s) not in the file keep their initial values: {}",
                                    o.path, names.size(), fmt::join(names, ", ")));
  }
  if (!m.exact()) {
    r.notices.push_back(fmt::format("model.init {}: partial load (model.init_strict: false): {}; the rest "
                                    "keep their initial values, unexpected tensors are ignored:\n{}",
                                    o.path, counts, format_init_mismatch(m)));
  }
  plan.file = std::move(file);
  plan.matched = m.matched;
  plan.file_name = m.file_name;
  return plan;
}

void load_init_weights(const InitPlan& plan, Strategy& strategy, torch::nn::Module& model) {
  const InitSource src(*plan.file, std::set<std::string>(plan.matched.begin(), plan.matched.end()), plan.file_name);
  strategy.load_parameters(src);
  at::NoGradGuard no_grad;
  for (auto& b : model.named_buffers(/*recurse=*/true)) {
    const std::string name = kModelPrefix + b.key();
    if (!src.has(name)) continue;
    at::Tensor dst = b.value();
    dst.copy_(src.read(name, 0, dst.numel()).view(dst.sizes()));
  }
}

}  // namespace mtrain::trainer
