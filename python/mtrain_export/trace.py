"""The model split into programs: a prologue (inputs -> first unit's input), the units (each a
chain link x -> y), and an epilogue (last unit's output, inputs -> loss). The whole loss is traced
once into ATen ops with every unit replaced by an opaque marker op, so the split is read off the
graph: whatever the model's Python does outside its units lands in the prologue or the epilogue,
and a model whose units are not one chain is refused here rather than trained wrongly.

A unit may take more than the hidden state: transformers' blocks also get the causal mask, the
position ids and (Llama) the rotary cos/sin, computed once before the first block. Those side
tensors must not depend on a parameter (their gradient would have nowhere to go) nor on a unit;
each unit's forward program computes them again from the model inputs (a few small ops; its
backward takes what it needs of them from the forward's saved activations), so the worker still
passes one hidden state from unit to unit. Non-persistent buffers (Llama's inv_freq) are not
state: the programs hold them as constants."""
import torch
import torch.fx as fx
import torch.utils._pytree as pytree
from torch.fx.experimental.proxy_tensor import make_fx

_LIB = torch.library.Library("mtrain_export", "FRAGMENT")
_LIB.define("unit(Tensor x, Tensor[] side, int index) -> Tensor")


@torch.library.impl(_LIB, "unit", "CompositeExplicitAutograd")
def _unit_impl(x, side, index):
    return x.clone()


@torch.library.register_fake("mtrain_export::unit", lib=_LIB)
def _unit_fake(x, side, index):
    return torch.empty_like(x)


class ExportError(Exception):
    """One paragraph for the user: what is wrong and what to try."""


_SIDE = object()  # where a side tensor goes in a unit's call
_STATIC = (type(None), bool, int, float, str, torch.dtype, torch.device)


class UnitCall:
    """How the model calls a unit: the hidden state first, then the rest of its arguments, whose
    tensors (the side tensors) come from the program's inputs and whose other values (None,
    flags) are fixed at export."""

    def __init__(self, spec, template):
        self.spec, self.template = spec, template

    def rebuild(self, x, side):
        it = iter(side)
        leaves = [next(it) if v is _SIDE else v for v in self.template]
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return (x, *args), kwargs


class _Marker(torch.nn.Module):
    def __init__(self, index, name, calls):
        super().__init__()
        self.index, self.name = index, name
        self.calls = calls

    def forward(self, x, *args, **kwargs):
        if not isinstance(x, torch.Tensor):
            raise ExportError(
                f"unit {self.name}'s first argument is a {type(x).__name__}, not a tensor; a unit must take "
                "the hidden state first and return the next one (a transformer block). Name other module "
                "types in --wrap-module-types.")
        leaves, spec = pytree.tree_flatten((args, kwargs))
        side, template = [], []
        for v in leaves:
            if isinstance(v, torch.Tensor):
                side.append(v)
                template.append(_SIDE)
            elif isinstance(v, _STATIC):
                template.append(v)
            else:
                raise ExportError(
                    f"unit {self.name} is called with a {type(v).__name__} argument; a unit's arguments "
                    "after the hidden state must be tensors, None or plain values (a cache object is "
                    "state the programs cannot carry: export with use_cache=False).")
        self.calls[self.index] = UnitCall(spec, template)
        return torch.ops.mtrain_export.unit(x, side, self.index)


def check_no_random(graph):
    """A backward program recomputes part of its forward (the cheap ops the min-cut partition does
    not save): a random op (dropout) would draw another mask there than in the forward, and the
    gradients would belong to no forward at all."""
    random = sorted({str(n.target) for n in graph.nodes if n.op == "call_function"
                     and any(w in str(n.target) for w in ("dropout", "bernoulli", "rand"))})
    if random:
        raise ExportError(
            f"the model draws random numbers in training mode ({', '.join(random)}: dropout); "
            "the compiled backward programs recompute part of their forward and cannot replay "
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
        elif n.op == "get_attr":  # a constant (a non-persistent buffer); GraphModule copies it
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


class UnitSide:
    """What a unit's programs take besides its own tensors and the hidden state: the side
    tensors' graph (None: none) on the inputs named ARGS (model inputs, outer persistent
    tensors), and the call that places them (UnitCall)."""

    def __init__(self, call, graph, args):
        self.call, self.graph, self.args = call, graph, args

    def tensors(self, *values):
        if self.graph is None:
            return ()
        out = self.graph(*values)
        return (out,) if isinstance(out, torch.Tensor) else tuple(out)


class Split:
    """outer: the outer tensor names; prologue, epilogue: (fx.GraphModule, arg names), the
    epilogue's arg 'hidden' the last unit's output; sides: a UnitSide per unit."""

    def __init__(self, outer, prologue, epilogue, sides):
        self.outer, self.prologue, self.epilogue, self.sides = outer, prologue, epilogue, sides


def state_names(module):
    """The parameters and persistent buffers of MODULE (its state_dict's tensors, each once)."""
    persistent = set(module.state_dict().keys())
    names = [n for n, _ in module.named_parameters()]
    return names + [n for n, _ in module.named_buffers() if n in persistent]


def split(model, units, inputs, input_names):
    """Trace the loss of MODEL on INPUTS with UNITS replaced by markers and cut it (Split)."""
    originals = [(name, mod) for name, mod in units]
    calls = {}
    try:
        for i, (name, _) in enumerate(units):
            _set_submodule(model, name, _Marker(i, name, calls))
        wrapped = _LossOf(model)
        outer = {n: t for n, t in list(wrapped.named_parameters()) + list(wrapped.named_buffers())}
        names = state_names(wrapped)  # non-persistent buffers stay attributes: constants
        trainable = {n for n, p in wrapped.named_parameters() if p.requires_grad}

        def whole(*flat):
            return torch.func.functional_call(wrapped, dict(zip(names, flat[:len(names)])),
                                              tuple(flat[len(names):]))

        gm = make_fx(whole, tracing_mode="fake", _allow_non_fake_inputs=True)(
            *[outer[n] for n in names], *inputs)
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
                    and n.target is torch.ops.mtrain_export.unit.default), key=lambda n: n.args[2])
    if [n.args[2] for n in marks] != list(range(len(units))):
        called = sorted({n.args[2] for n in marks})
        raise ExportError(
            f"of the {len(units)} units found, the loss calls {len(called)} (each exactly once is "
            "required); a unit the loss does not reach, or one called twice, cannot be a unit. "
            "Choose other --wrap-module-types.")
    for prev, cur in zip(marks, marks[1:]):
        if cur.args[0] is not prev:
            raise ExportError(
                f"unit {cur.args[2]} ({units[cur.args[2]][0]}) does not take unit {prev.args[2]}'s output "
                "as its input (there is computation between them); mtrain runs units as one chain. "
                "Choose --wrap-module-types so that consecutive units follow each other directly.")
    sides = []
    for mark in marks:
        qual = units[mark.args[2]][0]
        side_nodes = list(mark.args[1])
        if not side_nodes:
            sides.append(UnitSide(calls[mark.args[2]], None, []))
            continue
        side, side_args = _slice(graph, side_nodes, {})
        side_args = [real[a] for a in side_args]
        learned = sorted(a for a in side_args if f"m.{a}" in trainable)
        if learned:
            raise ExportError(
                f"unit {qual} is passed a tensor computed from the parameter(s) {', '.join(learned)} outside "
                "the units, besides its hidden state; its gradient would be lost. Compute it inside the "
                "unit, or choose --wrap-module-types whose blocks take only the hidden state and values "
                "that depend on the inputs alone (masks, positions).")
        sides.append(UnitSide(calls[mark.args[2]], fx.GraphModule(gm, side), side_args))
    loss = next(n for n in graph.nodes if n.op == "output").args[0]
    pro, pro_args = _slice(graph, [marks[0].args[0]], {})
    epi, epi_args = _slice(graph, [loss], {marks[-1]: "hidden"})
    real["hidden"] = "hidden"
    return Split([k[2:] for k in names], (fx.GraphModule(gm, pro), [real[a] for a in pro_args]),
                 (fx.GraphModule(gm, epi), [real[a] for a in epi_args]), sides)
