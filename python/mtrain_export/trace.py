"""The model split into programs: a prologue (inputs -> first unit's input), the units (each a
chain link x -> y), and an epilogue (last unit's output, inputs -> loss). The whole loss is traced
once into ATen ops with every unit replaced by an opaque marker op, so the split is read off the
graph: whatever the model's Python does outside its units lands in the prologue or the epilogue,
and a model whose units are not one chain is refused here rather than trained wrongly."""
import torch
import torch.fx as fx
from torch.fx.experimental.proxy_tensor import make_fx

_LIB = torch.library.Library("mtrain_export", "FRAGMENT")
_LIB.define("unit(Tensor x, int index) -> Tensor")


@torch.library.impl(_LIB, "unit", "CompositeExplicitAutograd")
def _unit_impl(x, index):
    return x.clone()


@torch.library.register_fake("mtrain_export::unit", lib=_LIB)
def _unit_fake(x, index):
    return torch.empty_like(x)


class ExportError(Exception):
    """One paragraph for the user: what is wrong and what to try."""


class _Marker(torch.nn.Module):
    def __init__(self, index):
        super().__init__()
        self.index = index

    def forward(self, x, *rest, **kw):
        if rest or kw or not isinstance(x, torch.Tensor):
            raise ExportError(
                f"unit {self.index} is called with more than one tensor argument; a unit must map one "
                "tensor to one tensor of the same shape (a transformer block: hidden states in, hidden "
                "states out). Name other module types in --wrap-module-types, or pass the extra "
                "values as buffers of the unit.")
        return torch.ops.mtrain_export.unit(x, self.index)


def check_no_random(graph):
    """A backward program recomputes its forward: a random op (dropout) would draw another mask
    there than in the forward, and the gradients would belong to no forward at all."""
    random = sorted({str(n.target) for n in graph.nodes if n.op == "call_function"
                     and any(w in str(n.target) for w in ("dropout", "bernoulli", "rand"))})
    if random:
        raise ExportError(
            f"the model draws random numbers in training mode ({', '.join(random)}: dropout); "
            "the compiled programs recompute each unit's forward in its backward and cannot replay "
            "the same draws yet. Export the model with dropout off (p=0).")


def _slice(graph, outputs, cut):
    """A new graph computing OUTPUTS from the placeholders of GRAPH, where every node in CUT
    (node -> name) becomes a placeholder of its own. Returns (graph, placeholder names in order)."""
    new = fx.Graph()
    env = {}
    names = []
    needed = set()
    stack = list(outputs)
    while stack:
        n = stack.pop()
        if n in needed:
            continue
        needed.add(n)
        if n not in cut:
            stack.extend(n.all_input_nodes)
    for n in graph.nodes:
        if n not in needed:
            continue
        if n in cut or n.op == "placeholder":
            name = cut.get(n, n.target)
            env[n] = new.placeholder(name)
            env[n].meta = dict(n.meta)
            names.append(name)
        elif n.op == "call_function":
            if n.target is torch.ops.mtrain_export.unit.default:
                raise ExportError(
                    "the model uses a unit's output other than as the next unit's input or the "
                    "epilogue's (a skip connection across units, or a unit called twice); each unit "
                    "must be one link of a chain. Choose other --wrap-module-types.")
            env[n] = new.node_copy(n, lambda a: env[a])
        else:
            raise ExportError(f"unexpected node {n.op} in the traced model")
    new.output(tuple(env[o] for o in outputs) if len(outputs) > 1 else env[outputs[0]])
    return new, names


class _LossOf(torch.nn.Module):
    """The training objective the worker's TorchScript path uses too: the model's own
    loss(input, target) if it has one, else cross-entropy of forward(input) against target."""

    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, *inputs):
        if hasattr(self.m, "loss"):
            return self.m.loss(*inputs)
        logits = self.m(*inputs[:-1])
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), inputs[-1].reshape(-1))


def find_units(model, type_names):
    """(qualified name, module) of every module whose class name is in TYPE_NAMES, outermost only,
    in registration order (fsdp.wrap_module_types' rule)."""
    found = []
    for name, mod in model.named_modules():
        if type(mod).__name__ in type_names and not any(name.startswith(u + ".") for u, _ in found):
            found.append((name, mod))
    return found


def _set_submodule(model, qualname, new):
    parent, _, leaf = qualname.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, new)


def split(model, units, inputs, input_names):
    """Trace the loss of MODEL on INPUTS with UNITS replaced by markers and cut it. Returns
    (outer tensor names, prologue, prologue arg names, epilogue, epilogue arg names), the
    programs as fx.GraphModules; the epilogue's arg 'hidden' is the last unit's output."""
    originals = [(name, mod) for name, mod in units]
    try:
        for i, (name, _) in enumerate(units):
            _set_submodule(model, name, _Marker(i))
        wrapped = _LossOf(model)
        outer = dict(wrapped.named_parameters())
        outer.update(dict(wrapped.named_buffers()))
        names = list(outer)

        def whole(*flat):
            return torch.func.functional_call(wrapped, dict(zip(names, flat[:len(names)])),
                                              tuple(flat[len(names):]))

        gm = make_fx(whole, tracing_mode="fake")(*outer.values(), *inputs)
    finally:
        for name, mod in originals:
            _set_submodule(model, name, mod)
    graph = gm.graph
    check_no_random(graph)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    real = {}  # placeholder names must be identifiers; the table keeps the dotted names
    for i, (n, name) in enumerate(zip(placeholders, [k[2:] for k in names] + list(input_names))):
        n.target = n.name = f"a{i}"
        real[n.target] = name
    marks = sorted((n for n in graph.nodes if n.op == "call_function"
                    and n.target is torch.ops.mtrain_export.unit.default), key=lambda n: n.args[1])
    if [n.args[1] for n in marks] != list(range(len(units))):
        called = sorted({n.args[1] for n in marks})
        raise ExportError(
            f"of the {len(units)} units found, the loss calls {len(called)} (each exactly once is "
            "required); a unit the loss does not reach, or one called twice, cannot be a unit. "
            "Choose other --wrap-module-types.")
    for prev, cur in zip(marks, marks[1:]):
        if cur.args[0] is not prev:
            raise ExportError(
                f"unit {cur.args[1]} ({units[cur.args[1]][0]}) does not take unit {prev.args[1]}'s output "
                "as its input (there is computation between them); mtrain runs units as one chain. "
                "Choose --wrap-module-types so that consecutive units follow each other directly.")
    loss = next(n for n in graph.nodes if n.op == "output").args[0]
    pro, pro_args = _slice(graph, [marks[0].args[0]], {})
    epi, epi_args = _slice(graph, [loss], {marks[-1]: "hidden"})
    real["hidden"] = "hidden"
    outer_names = [k[2:] for k in names]
    return (outer_names, fx.GraphModule(gm, pro), [real[a] for a in pro_args],
            fx.GraphModule(gm, epi), [real[a] for a in epi_args])
