"""The programs of a package as plain functions of flat tensors, exported with torch.export and
compiled by AOTInductor. A unit's forward program returns, beside its output, the activations its
backward program needs (the partition torch.compile makes: AOTAutograd's joint graph cut by the
min-cut partitioner, which saves matrix-multiply outputs and recomputes cheap elementwise ops), so
the backward computes no forward again; the activations are values the program made, never a
parameter or a view of one, so a sharded engine can still free a unit after its forward and gather
it again for its backward. A unit's programs also take its persistent buffers and the side
inputs its block is called with (masks, positions: trace.UnitSide), and differentiate its
parameters only. The prologue's and epilogue's programs differentiate by torch.func.vjp."""
import collections

import torch
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch._subclasses.fake_tensor import FakeTensor
from torch.fx.experimental.proxy_tensor import make_fx

from .trace import ExportError, check_no_random


class _Program(torch.nn.Module):
    """torch.export wants a Module; this one runs FN on its flat tensor arguments."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


UnitPrograms = collections.namedtuple("UnitPrograms", "forward backward output saved")


def unit_programs(unit, tensor_names, n_params, side, args):
    """The programs of one unit on ARGS (its tensors in TENSOR_NAMES' order, the side inputs, then
    its input x): forward(*tensors, *side_inputs, x) -> (y, *saved); backward(*tensors,
    *side_inputs, x, *saved, grad_y) -> (grad_x, *grad_params). TENSORS are the unit's parameters
    (the first N_PARAMS, the only ones differentiated) and persistent buffers; SIDE
    (trace.UnitSide) computes the unit's other tensor arguments (masks, positions) from the
    SIDE_INPUTS and places them in its call. OUTPUT is y and SAVED the activations for ARGS (the
    backward's examples)."""
    k, s = len(tensor_names), len(side.args)
    n_in = k + s + 1  # the forward's inputs; the backward's gradient comes after them

    def call(tensors, side_inputs, x):
        call_args, kwargs = side.call.rebuild(x, side.tensors(*side_inputs))
        y = torch.func.functional_call(unit, dict(zip(tensor_names, tensors)), call_args, kwargs)
        if not isinstance(y, torch.Tensor):
            raise ExportError(f"a unit of type {type(unit).__name__} returns a {type(y).__name__}; a unit must "
                              "return the next hidden state as one tensor")
        return y

    def joint(*a):
        rest, side_inputs = a[n_params:k], a[k:k + s]
        y, vjp = torch.func.vjp(lambda p, x: call((*p, *rest), side_inputs, x), tuple(a[:n_params]), a[k + s])
        grad_params, grad_x = vjp(a[n_in])
        return (y, grad_x, *grad_params)

    with torch.no_grad():
        y = call(args[:k], args[k:k + s], args[k + s])
    # Real tensors the unit reads besides its arguments (non-persistent buffers, the side graph's
    # constants) become the graph's constants.
    gm = make_fx(joint, tracing_mode="fake", _allow_non_fake_inputs=True)(*args, torch.ones_like(y))
    check_no_random(gm.graph)
    # The partitioner tells the forward's inputs from the incoming gradient by these names.
    for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        n.target = n.name = f"primals_{i + 1}" if i < n_in else "tangents_1"
    gm.recompile()
    fw, bw = min_cut_rematerialization_partition(gm, None, num_fwd_outputs=1)
    fw_out = next(n for n in fw.graph.nodes if n.op == "output").args[0]
    primal = {n.name: int(n.name.split("_")[1]) - 1 for n in fw.graph.nodes if n.op == "placeholder"}
    storages = {primal_storage(n): n for n in fw.graph.nodes if n.op == "placeholder"}
    storages.pop(None, None)
    # The partitioner saves views of parameters (a transposed weight); a view of a gathered
    # parameter would not survive a sharded engine freeing it, so the backward takes the
    # parameter itself and makes the view again (no copy, no compute).
    views = {}
    for n in fw_out[1:]:
        if not isinstance(n.meta.get("val"), torch.Tensor):
            raise ExportError(f"unit {type(unit).__name__}: its backward would take {n.name}, a size, from its "
                              "forward; mtrain passes only tensors between programs. Please report it with the "
                              "model's code.")
        if n.op != "placeholder" and primal_storage(n) in storages:
            views[n.name] = view_chain(n, unit)
    saved_names = [n.name for n in fw_out[1:]]
    _redo_views(bw, views)
    # Activations cross the program boundary; the unit's own inputs the caller has anyway.
    activations = [name for name in saved_names if name not in primal and name not in views]
    bw_inputs = [n.name for n in bw.graph.nodes if n.op == "placeholder"]

    def forward(*a):
        out = fw(*a)
        by_name = dict(zip(saved_names, out[1:]))
        return (out[0], *[by_name[name].contiguous() for name in activations])

    def backward(*a):
        inputs, acts, grad = a[:n_in], a[n_in:-1], a[-1]
        value = dict(zip(activations, acts))
        value["tangents_1"] = grad
        for name, i in primal.items():
            value.setdefault(name, inputs[i])
        return tuple(bw(*[value[name] for name in bw_inputs]))

    with torch.no_grad():
        out = forward(*args)
    return UnitPrograms(_Program(forward), _Program(backward), out[0], list(out[1:]))


def view_chain(node, unit):
    """(the placeholder NODE is a view of, the view nodes from it to NODE)."""
    chain = []
    while node.op != "placeholder":
        inputs = node.all_input_nodes
        if node.op != "call_function" or len(inputs) != 1:
            raise ExportError(f"unit {type(unit).__name__}: its backward would take {node.name}, a view of its "
                              "input made by more than one operation; mtrain cannot pass it between the programs. "
                              "Please report it with the model's code.")
        chain.append(node)
        node = inputs[0]
    return node, chain[::-1]


def _redo_views(bw, views):
    """In the backward graph BW, each placeholder named in VIEWS becomes its view chain applied to
    the input it is a view of (a new placeholder of that input's name where there is none)."""
    placeholders = {n.name: n for n in bw.graph.nodes if n.op == "placeholder"}
    body = next(n for n in bw.graph.nodes if n.op != "placeholder")
    for name, (base, chain) in views.items():
        with bw.graph.inserting_before(body):
            if base.name not in placeholders:
                placeholders[base.name] = bw.graph.placeholder(base.name)
                placeholders[base.name].meta = dict(base.meta)
            env = {base: placeholders[base.name]}
            for c in chain:
                env[c] = bw.graph.node_copy(c, lambda a: env[a])
        placeholders[name].replace_all_uses_with(env[chain[-1]])
        bw.graph.erase_node(placeholders.pop(name))
    bw.recompile()


def primal_storage(node):
    """The storage NODE's traced value lives in (equal for views of one tensor)."""
    val = node.meta.get("val")
    return val.untyped_storage()._cdata if isinstance(val, FakeTensor) else None


def prologue_programs(gm, n_params):
    """The code before the first unit: forward(*params, *inputs) -> x;
    backward(*params, *inputs, grad_x) -> grad_params (inputs take no gradient: token ids)."""
    def forward(*args):
        return gm(*args)

    def backward(*args):
        params, inputs, grad = args[:n_params], args[n_params:-1], args[-1]
        _, vjp = torch.func.vjp(lambda *p: gm(*p, *inputs), *params)
        return tuple(vjp(grad))

    return _Program(forward), _Program(backward)


def epilogue_programs(gm, n_params, hidden_at):
    """The code after the last unit, ending in the loss: forward(*args) -> loss (evaluation);
    step(*args) -> (loss, grad_hidden, *grad_params) for a loss gradient of 1. ARGS are the
    epilogue's arguments in order (its parameters first, then inputs, the hidden state at
    HIDDEN_AT)."""
    def forward(*args):
        return gm(*args)

    def step(*args):
        args = list(args)
        wrt = list(range(n_params)) + [hidden_at]

        def f(*diff):
            full = list(args)
            for i, v in zip(wrt, diff):
                full[i] = v
            return gm(*full)

        loss, vjp = torch.func.vjp(f, *[args[i] for i in wrt])
        grads = vjp(torch.ones_like(loss))
        return (loss, grads[-1], *grads[:-1])

    return _Program(forward), _Program(step)
