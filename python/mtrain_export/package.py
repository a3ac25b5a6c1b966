"""One package directory: manifest.json (format, PyTorch version, device, inputs, the tensor
table with tied groups, the units and the programs with the tensor names they take), the initial
weights as model.safetensors (state_dict names, one entry per tied group) and programs/*.pt2."""
import importlib.util
import json
import os
import time

import torch
from safetensors.torch import save_file

from . import FORMAT, FORMAT_VERSION
from .compile import compile_program
from .programs import epilogue_programs, prologue_programs, unit_programs
from .trace import ExportError, find_units, split, state_names

DTYPES = {"int64": torch.int64, "int32": torch.int32, "float32": torch.float32,
          "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}


def dtype_name(dtype):
    return str(dtype).removeprefix("torch.")


def parse_example(spec):
    """NAME=DTYPE:DxDx... -> (name, example tensor): zeros for integers (valid token ids and class
    labels), a fixed normal sample for floats."""
    try:
        name, rest = spec.split("=", 1)
        dt, dims = rest.split(":", 1)
        shape = [int(d) for d in dims.split("x")]
    except ValueError:
        raise ExportError(f"--example '{spec}' is not NAME=DTYPE:DIMS (e.g. input=int64:6x8)") from None
    if dt not in DTYPES or not name.isidentifier() or any(d <= 0 for d in shape):
        raise ExportError(f"--example '{spec}': the name must be an identifier, the dtype one of "
                          f"{', '.join(DTYPES)} and every dimension positive")
    if DTYPES[dt].is_floating_point:
        return name, torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(DTYPES[dt])
    return name, torch.zeros(shape, dtype=DTYPES[dt])


def load_factory(spec):
    path, sep, fn = spec.rpartition(":")
    if not sep or not path.endswith(".py") or not os.path.isfile(path):
        raise ExportError(f"'{spec}' is not MODULE.py:FUNCTION naming an existing Python file")
    mod_spec = importlib.util.spec_from_file_location("mtrain_user_model", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    if not callable(getattr(mod, fn, None)):
        raise ExportError(f"{path} has no function '{fn}'")
    model = getattr(mod, fn)()
    if not isinstance(model, torch.nn.Module):
        raise ExportError(f"{spec} returned a {type(model).__name__}, not a torch.nn.Module")
    return model


def tensor_table(model):
    """Every parameter and buffer under its first state_dict name, with the other names that
    share it (tied) — the table the worker builds its module tree from."""
    table, by_id = [], {}
    persistent = set(model.state_dict().keys())
    named = [(n, t, "parameter") for n, t in model.named_parameters(remove_duplicate=False)]
    named += [(n, t, "buffer") for n, t in model.named_buffers(remove_duplicate=False)]
    for name, t, kind in named:
        if id(t) in by_id:
            by_id[id(t)]["tied"].append(name)
            continue
        entry = {"name": name, "kind": kind, "shape": list(t.shape), "dtype": dtype_name(t.dtype),
                 "requires_grad": bool(t.requires_grad), "tied": [], "persistent": name in persistent}
        by_id[id(t)] = entry
        table.append(entry)
    return table


def export(factory, examples, wrap_types, out, device):
    t_start = time.monotonic()
    model = load_factory(factory)
    model.to(device).train()
    inputs = [parse_example(s) for s in examples]
    input_names = [n for n, _ in inputs]
    input_values = [v.to(device) for _, v in inputs]
    units = find_units(model, set(wrap_types))
    if not units:
        raise ExportError(f"no module of the model is of a type in --wrap-module-types "
                          f"({', '.join(wrap_types)}); name the class of its repeated blocks")
    table = tensor_table(model)
    canonical = {e["name"]: e["name"] for e in table}
    for e in table:
        for t in e["tied"]:
            canonical[t] = e["name"]
    state = dict(model.named_parameters(remove_duplicate=False))
    state.update(dict(model.named_buffers(remove_duplicate=False)))

    sp = split(model, units, input_values, input_names)
    (pro_gm, pro_args), (epi_gm, epi_args) = sp.prologue, sp.epilogue
    outer_set = {canonical[n] for n in sp.outer}
    os.makedirs(os.path.join(out, "programs"), exist_ok=True)
    stats = []

    def value(name):
        if name in input_names:
            return input_values[input_names.index(name)]
        return state[name].detach()

    written = {}  # cache key -> package file: identical programs (equal blocks) are stored once

    def run(program, args, stem):
        rel = f"programs/{stem}.pt2"
        key = compile_program(program, args, os.path.join(out, rel), device, stats)
        stats[-1]["program"] = stem
        if key in written:
            os.unlink(os.path.join(out, rel))
            rel = written[key]
        written[key] = rel
        return {"file": rel, "key": key}

    # Prologue: its parameter arguments first (the table's names), then model inputs.
    pro_params = [a for a in pro_args if a not in input_names]
    pro_order = pro_params + [a for a in pro_args if a in input_names]
    pro_perm = [pro_args.index(a) for a in pro_order]
    pro_fn = lambda *a: pro_gm(*[a[pro_perm.index(i)] for i in range(len(a))])  # noqa: E731
    fwd, bwd = prologue_programs(pro_fn, len(pro_params))
    pro_vals = [value(a) for a in pro_order]
    with torch.no_grad():
        hidden = pro_fn(*pro_vals)
    prologue = {"args": [canonical.get(a, a) for a in pro_order], "forward": run(fwd, pro_vals, "prologue_forward"),
                "backward": run(bwd, pro_vals + [torch.ones_like(hidden)], "prologue_backward"),
                "grads": [canonical[a] for a in pro_params]}

    unit_entries = []
    for (qual, unit), side in zip(units, sp.sides):
        rel_names = state_names(unit)  # non-persistent buffers are the programs' constants
        full = [canonical[f"{qual}.{n}"] for n in rel_names]
        if outer_set.intersection(full):
            raise ExportError(f"unit {qual} shares a tensor with the code outside the units "
                              f"({', '.join(sorted(outer_set.intersection(full)))}); tie only outside units")
        vals = [state[f"{qual}.{n}"].detach() for n in rel_names] + [value(a) for a in side.args]
        n_params = len(list(unit.named_parameters()))
        progs = unit_programs(unit, rel_names, n_params, side, vals + [hidden])
        out_hidden = progs.output
        if out_hidden.shape != hidden.shape or out_hidden.dtype != hidden.dtype:
            raise ExportError(f"unit {qual} maps a {tuple(hidden.shape)} tensor to {tuple(out_hidden.shape)}; "
                              "a unit must keep its input's shape and dtype")
        # Equal blocks export to equal graphs: the cache key finds them (run), whatever their
        # names, and a block that differs in code but not in parameters gets its own programs.
        stem = f"unit{len(unit_entries)}_{type(unit).__name__}"
        unit_entries.append({"name": qual, "type": type(unit).__name__,
                             "args": full + [canonical.get(a, a) for a in side.args],
                             "grads": full[:n_params], "forward": run(progs.forward, vals + [hidden], stem + "_forward"),
                             "backward": run(progs.backward, vals + [hidden, *progs.saved, torch.ones_like(hidden)],
                                             stem + "_backward"),
                             "saved": [{"shape": list(t.shape), "dtype": dtype_name(t.dtype)} for t in progs.saved]})
        hidden = out_hidden

    epi_params = [a for a in epi_args if a not in input_names and a != "hidden"]
    epi_order = epi_params + [a for a in epi_args if a in input_names or a == "hidden"]
    epi_perm = [epi_args.index(a) for a in epi_order]
    epi_fn = lambda *a: epi_gm(*[a[epi_perm.index(i)] for i in range(len(a))])  # noqa: E731
    fwd, step = epilogue_programs(epi_fn, len(epi_params), epi_order.index("hidden"))
    epi_vals = [hidden if a == "hidden" else value(a) for a in epi_order]
    epilogue = {"args": [canonical.get(a, a) for a in epi_order], "forward": run(fwd, epi_vals, "epilogue_forward"),
                "step": run(step, epi_vals, "epilogue_step"), "grads": [canonical[a] for a in epi_params]}

    weights = {e["name"]: state[e["name"]].detach().cpu().contiguous() for e in table if e["persistent"]}
    save_file(weights, os.path.join(out, "model.safetensors"))
    elapsed = round(time.monotonic() - t_start, 1)
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "torch": torch.__version__, "device": device,
        "inputs": [{"name": n, "dtype": dtype_name(v.dtype), "shape": list(v.shape)} for n, v in inputs],
        "hidden": {"shape": list(hidden.shape), "dtype": dtype_name(hidden.dtype)},
        "tensors": table, "prologue": prologue, "units": unit_entries, "epilogue": epilogue,
        "export": {"seconds": elapsed, "programs": stats},
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    n_hit = sum(s["cached"] for s in stats)
    compile_s = sum(s["compile_s"] for s in stats if not s["cached"])
    return (f"mtrain export: wrote {out}: {len(stats)} programs ({n_hit} from the cache, {len(written)} files), "
            f"{len(units)} units, {len(table)} tensors; {elapsed} s in all, {compile_s:.1f} s compiling")
