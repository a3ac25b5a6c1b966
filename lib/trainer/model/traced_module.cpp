#include "lib/trainer/model/traced_module.hpp"

#include <torch/csrc/jit/ir/ir.h>

#include <fmt/format.h>

#include "lib/core/strings.hpp"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

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

// Dropout's probability is its input 1. With p = 0 a dropout is the identity in both modes
// (GPT-2's, BERT's and most Hugging Face configs' dropouts are 0.0 for fine-tuning), so the mode
// the trace froze changes nothing: not a frozen mode op. A p that is not a constant (computed in
// the graph) is taken as nonzero.
bool identity_dropout(const torch::jit::Node* n, const std::string& op) {
  if (op.find("dropout") == std::string::npos || n->inputs().size() < 2) return false;
  const auto p = torch::jit::toIValue(n->input(1));
  return p && (p->isDouble() || p->isInt()) && p->toScalar().toDouble() == 0.0;
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
      if (op == mode_ops().end() || n->inputs().size() <= op->second || identity_dropout(n, op->first)) return;
      const auto mode = torch::jit::toIValue(n->input(op->second));
      if (mode && mode->isBool()) (mode->toBool() ? out.frozen_training : out.frozen_eval).push_back(op->first);
    });
  }
  for (const auto& c : m.children()) visit(c, seen, out);
}

}  // namespace

TraceFacts trace_facts(const torch::jit::Module& m) {
  TraceFacts out;
  std::set<const c10::ClassType*> seen;
  visit(m, seen, out);
  if (!out.traced) {  // a scripted constant is the user's choice
    out.frozen_training.clear();
    out.frozen_eval.clear();
  }
  return out;
}

std::string TraceFacts::describe_frozen() const {
  std::vector<std::string> parts;
  for (const auto* ops : {&frozen_training, &frozen_eval}) {
    std::map<std::string, int> counts;
    std::vector<std::string> order;
    for (const auto& op : *ops)
      if (counts[op]++ == 0) order.push_back(op);
    for (const auto& op : order)
      parts.push_back(fmt::format("{} (training={}){}", op, ops == &frozen_training ? "true" : "false",
                                  counts[op] > 1 ? fmt::format(" x{}", counts[op]) : ""));
  }
  return str::join(parts, ", ");
}

}  // namespace mtrain::trainer
