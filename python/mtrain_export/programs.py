"""The programs of a package as plain functions of flat tensors, exported with torch.export and
compiled by AOTInductor. The backward programs recompute their forward (torch.func.vjp), so a
sharded engine can gather a unit, run its forward, free it, and gather it again for its backward
with no saved activations but the unit's input."""
import torch


class _Program(torch.nn.Module):
    """torch.export wants a Module; this one runs FN on its flat tensor arguments."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def unit_programs(unit, param_names):
    """(forward, backward) of one unit: forward(*params, x) -> y;
    backward(*params, x, grad_y) -> (grad_x, *grad_params)."""
    k = len(param_names)

    def call(params, x):
        return torch.func.functional_call(unit, dict(zip(param_names, params)), (x,))

    def forward(*args):
        return call(args[:k], args[k])

    def backward(*args):
        _, vjp = torch.func.vjp(call, tuple(args[:k]), args[k])
        grad_params, grad_x = vjp(args[k + 1])
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
