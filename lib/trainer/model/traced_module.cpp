#include "mtrain/trainer/model/traced_module.hpp"

#include <torch/csrc/jit/ir/ir.h>

#include <functional>
#include <map>
#include <set>

namespace mtrain::trainer {
namespace {

// The `training` argument's position in the operators whose behaviour depends on it.
const std::map<std::string, size_t>& mode_ops() {
  static const std::map<std::string, size_t> ops = {
      {"aten::dropout", 2},      {"aten::dropout_", 2},       {"aten::feature_dropout", 2},
      {"aten::alpha_dropout", 2}, {"aten::feature_alpha_dropout", 2},
      {"aten::batch_norm", 5},   {"aten::instance_norm", 5}};
  return ops;
}

bool made_by_tracer(const torch::jit::Node* n) {
  const auto origin = n->sourceRange().findSourceRangeThatGenerated();
  if (!origin || !origin->source()) return false;
  return origin->source()->text_str().str().find("jit/_trace.py(") != std::string::npos;
}

void each_node(const torch::jit::Block* b, const std::function<void(const torch::jit::Node*)>& fn) {
  for (const torch::jit::Node* n : b->nodes()) {
    fn(n);
    for (const torch::jit::Block* inner : n->blocks()) each_node(inner, fn);
  }
}

void visit(const torch::jit::Module& m, std::set<const c10::ClassType*>& seen, TraceFacts& out) {
  if (!seen.insert(m.type().get()).second) return;
  for (const auto& method : m.get_methods()) {
    each_node(method.graph()->block(), [&](const torch::jit::Node* n) {
      if (!out.traced && made_by_tracer(n)) out.traced = true;
      const auto op = mode_ops().find(n->kind().toQualString());
      if (op == mode_ops().end() || n->inputs().size() <= op->second) return;
      const auto mode = torch::jit::toIValue(n->input(op->second));
      if (mode && mode->isBool())
        out.frozen_mode_ops.push_back(op->first + " (training=" +
                                      (mode->toBool() ? "true" : "false") + ")");
    });
  }
  for (const auto& c : m.children()) visit(c, seen, out);
}

}  // namespace

TraceFacts trace_facts(const torch::jit::Module& m) {
  TraceFacts out;
  std::set<const c10::ClassType*> seen;
  visit(m, seen, out);
  if (!out.traced) out.frozen_mode_ops.clear();  // a scripted constant is the user's choice
  return out;
}

}  // namespace mtrain::trainer
