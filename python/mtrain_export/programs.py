"""The programs of a package as plain functions of flat tensors, exported with torch.export and
compiled by AOTInductor. The backward programs recompute their forward (torch.func.vjp), so a
sharded engine can gather a unit, run its forward, free it, and gather it again for its backward
with no saved activations but the unit's input."""
import torch

from .trace import ExportError

class _Program(torch.nn.Module):
    """torch.export wants a Module; this one runs FN on its flat tensor arguments."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def unit_programs(unit, tensor_names, n_params, side):
    """(forward, backward) of one unit: forward(*tensors, *side_inputs, x) -> y;
    backward(*tensors, *side_inputs, x, grad_y) -> (grad_x, *grad_params). TENSORS are the unit's
    parameters (the first N_PARAMS) and persistent buffers; SIDE (trace.UnitSide) computes the
    unit's other tensor arguments (masks, positions) from SIDE_INPUTS and places them in its call."""
    k, s = len(tensor_names), len(side.args)

    def call(tensors, side_inputs, x):
        args, kwargs = side.call.rebuild(x, side.tensors(*side_inputs))
        y = torch.func.functional_call(unit, dict(zip(tensor_names, tensors)), args, kwargs)
        if not isinstance(y, torch.Tensor):
            raise ExportError(f"a unit of type {type(unit).__name__} returns a {type(y).__name__}; a unit must "
                              "return the next hidden state as one tensor")
        return y

    def forward(*args):
        return call(args[:k], args[k:k + s], args[k + s])

    def backward(*args):
        params, rest, side_inputs = args[:n_params], args[n_params:k], args[k:k + s]
        _, vjp = torch.func.vjp(lambda p, x: call((*p, *rest), side_inputs, x), tuple(params), args[k + s])
        grad_params, grad_x = vjp(args[k + s + 1])
        return (grad_x, *grad_params)

    return _Program(forward), _Program(backward)


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
