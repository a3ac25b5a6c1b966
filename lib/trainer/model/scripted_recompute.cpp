#include "lib/trainer/model/scripted_recompute.hpp"

#include "lib/trainer/model/recompute.hpp"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/library.h>

#include <mutex>
#include <set>
#include <unordered_map>

namespace mtrain::trainer {
namespace {

const char* const kOp = "mtrain::checkpoint_call";

struct Entry {
  std::shared_ptr<torch::nn::Module> mirror;
  std::shared_ptr<std::function<bool()>> active;
};

// The selected block instances of every live ScriptedRecompute, by jit object.
std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<const c10::ivalue::Object*, Entry>& table() {
  static std::unordered_map<const c10::ivalue::Object*, Entry> t;
  return t;
}

// The interpreter's optimisation switch is per thread; a recompute in backward may run on an
// autograd device thread, where it is on by default (see torchscript.cpp on why it must be off).
struct PlainInterpretation {
  bool old = torch::jit::getGraphExecutorOptimize();
  PlainInterpretation() { torch::jit::setGraphExecutorOptimize(false); }
  ~PlainInterpretation() { torch::jit::setGraphExecutorOptimize(old); }
};

// mtrain::checkpoint_call(Any module, Tensor x) -> Tensor: module.forward(x), checkpointed
// when the module is a selected block of a model that is recomputing now.
void checkpoint_call(const c10::OperatorHandle&, torch::jit::Stack* stack) {
  const at::Tensor x = torch::jit::pop(*stack).toTensor();
  c10::intrusive_ptr<c10::ivalue::Object> obj = torch::jit::pop(*stack).toObject();
  Entry e;
  {
    std::lock_guard<std::mutex> lock(table_mutex());
    auto it = table().find(obj.get());
    if (it != table().end()) e = it->second;
  }
  torch::jit::Module block(obj);
  BlockFn fn = [block](const at::Tensor& t) mutable {
    PlainInterpretation plain;
    return block.forward({t}).toTensor();
  };
  const bool recompute = e.active && (*e.active)() && x.requires_grad();
  torch::jit::push(*stack, recompute ? run_checkpointed(std::move(fn), x, e.mirror) : fn(x));
}

TORCH_LIBRARY(mtrain, m) {
  m.def(torch::schema("mtrain::checkpoint_call(Any module, Tensor x) -> Tensor",
                      c10::AliasAnalysisKind::CONSERVATIVE),
        torch::CppFunction::makeFromBoxedFunction<&checkpoint_call>());
}

// Every node of a graph, nested blocks (if/loop bodies) included.
void each_node(torch::jit::Block* b, const std::function<void(torch::jit::Node*)>& fn) {
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    torch::jit::Node* n = *it++;  // fn may replace n
    for (torch::jit::Block* inner : n->blocks()) each_node(inner, fn);
    fn(n);
  }
}

// The method graphs of every module class reachable from root, each class once.
void each_graph(const torch::jit::Module& m, std::set<const c10::ClassType*>& seen,
                const std::function<void(torch::jit::Graph&)>& fn) {
  if (!seen.insert(m.type().get()).second) return;
  for (const auto& method : m.get_methods()) fn(*method.graph());
  for (const auto& c : m.children()) each_graph(c, seen, fn);
}

// Replaces n by a node of `kind` with n's inputs and output type; returns it.
torch::jit::Node* replace(torch::jit::Node* n, c10::Symbol kind) {
  torch::jit::Graph& g = *n->owningGraph();
  torch::jit::Node* r = g.create(kind, n->inputs(), 1);
  r->output()->setType(n->output()->type());
  r->insertBefore(n);
  n->output()->replaceAllUsesWith(r->output());
  n->destroy();
  return r;
}

size_t rewrite(const torch::jit::Module& root, const std::set<const c10::ClassType*>& types,
               bool to_checkpoint) {
  const c10::Symbol op = c10::Symbol::fromQualString(kOp);
  const c10::Symbol call = c10::Symbol::fromQualString("prim::CallMethod");
  const c10::Symbol name = c10::Symbol::attr("name");
  size_t n_sites = 0;
  std::set<const c10::ClassType*> seen;
  each_graph(root, seen, [&](torch::jit::Graph& g) {
    each_node(g.block(), [&](torch::jit::Node* n) {
      if (to_checkpoint) {
        if (n->kind() != call || n->s(name) != "forward" || n->inputs().size() != 2 ||
            n->outputs().size() != 1)
          return;
        auto cls = n->input(0)->type()->cast<c10::ClassType>();
        if (!cls || types.count(cls.get()) == 0) return;
        if (!n->input(1)->type()->isSubtypeOf(*c10::TensorType::get()) ||
            !n->output()->type()->isSubtypeOf(*c10::TensorType::get()))
          return;
        replace(n, op);
        ++n_sites;
      } else if (n->kind() == op) {
        replace(n, call)->s_(name, "forward");
        ++n_sites;
      }
    });
  });
  return n_sites;
}

std::set<const c10::ClassType*> types_of(const std::vector<RecomputedBlock>& blocks) {
  std::set<const c10::ClassType*> out;
  for (const auto& b : blocks) out.insert(b.module.type().get());
  return out;
}

}  // namespace

ScriptedRecompute::ScriptedRecompute(torch::jit::Module root, std::vector<RecomputedBlock> blocks,
                                     std::function<bool()> active)
    : root_(std::move(root)),
      blocks_(std::move(blocks)),
      active_(std::make_shared<std::function<bool()>>(std::move(active))) {
  {
    std::lock_guard<std::mutex> lock(table_mutex());
    for (const auto& b : blocks_) table()[b.module._ivalue().get()] = Entry{b.mirror, active_};
  }
  sites_ = rewrite(root_, types_of(blocks_), true);
}

ScriptedRecompute::~ScriptedRecompute() {
  std::lock_guard<std::mutex> lock(table_mutex());
  for (const auto& b : blocks_) table().erase(b.module._ivalue().get());
}

void ScriptedRecompute::with_plain_calls(const std::function<void()>& fn) {
  rewrite(root_, {}, false);
  try {
    fn();
  } catch (...) {
    rewrite(root_, types_of(blocks_), true);
    throw;
  }
  rewrite(root_, types_of(blocks_), true);
}

}  // namespace mtrain::trainer
