"""The package programs composed as the worker composes them (tests/e2e/compiled/test_*.sh).

  model DIR          writes DIR/model.py: make() -> the golden test's TinyGPT with SDPA attention
                     (tests/e2e/trainer/torchscript_golden.py), seeded; make_dropout() -> the
                     same with dropout in its last block's MLP
  data DIR ROWS      writes DIR/data.pt: torch.save({"input", "target"}) of ROWS token rows of the
                     package's length (target = input shifted by one), seeded
  train PKG MODEL.py DATA GLOBAL STEPS OPT LR OUT
                     eager PyTorch training of the factory's model, started from the package's
                     model.safetensors: STEPS steps of OPT (sgd, adamw; weight decay 0) on GLOBAL
                     rows per step in file order (as mtrain reads them with data.shuffle false);
                     its state dict to OUT
  steps PKG MODEL.py N   runs N SGD steps (lr 0.1, rows in order, batch of the package's example)
                     twice: eager PyTorch on the factory's model, and the package's compiled
                     programs (prologue forward, unit forwards with their activations, epilogue
                     step, unit backwards in reverse on those activations, prologue backward,
                     tied gradients summed); prints the max |delta| of
                     the loss, of every gradient (each step, before the update) and of every
                     weight after N steps, and exits 1 if any is above TOL (argv[5], default 1e-5)
"""
import json
import os
import sys

import torch
from safetensors.torch import load_file

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))


def write_model(d):
    with open(os.path.join(d, "model.py"), "w") as f:
        f.write("import sys\n"
                f"sys.path.insert(0, {os.path.join(HERE, '..', 'trainer')!r})\n"
                "import torch\nimport torchscript_golden as g\n\n\n"
                "def make():\n    torch.manual_seed(1)\n    return g.TinyGPT('sdpa')\n\n\n"
                "def make_dropout():\n    m = make()\n    m.blocks[1].mlp.append(torch.nn.Dropout(0.1))\n"
                "    return m\n")


def load(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("m", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make()


class Compiled:
    def __init__(self, pkg):
        self.m = json.load(open(os.path.join(pkg, "manifest.json")))
        self.w = load_file(os.path.join(pkg, "model.safetensors"))
        loaded = {}

        def prog(entry):
            if entry["file"] not in loaded:
                loaded[entry["file"]] = torch._inductor.aoti_load_package(os.path.join(pkg, entry["file"]))
            return loaded[entry["file"]]
        self.prog = prog

    def step(self, inputs):
        m, w = self.m, self.w
        # A compiled program assumes the example's (contiguous) strides and does not check them:
        # a sliced batch gives wrong numbers, not an error, so every input is made contiguous.
        inputs = {k: v.contiguous() for k, v in inputs.items()}
        val = lambda a: inputs[a] if a in inputs else w[a]  # noqa: E731
        grads = {}

        def acc(names, gs):
            for n, g in zip(names, gs):
                grads[n] = grads[n] + g if n in grads else g
        pro = m["prologue"]
        h = [self.prog(pro["forward"])(*[val(a) for a in pro["args"]])]
        saved = []  # per unit: the activations its forward returns for its backward
        for u in m["units"]:
            out = self.prog(u["forward"])(*[val(a) for a in u["args"]], h[-1])
            h.append(out[0])
            saved.append(list(out[1:]))
        epi = m["epilogue"]
        out = self.prog(epi["step"])(*[h[-1] if a == "hidden" else val(a) for a in epi["args"]])
        loss, g = out[0], out[1]
        acc(epi["grads"], out[2:])
        for i in reversed(range(len(m["units"]))):
            u = m["units"][i]
            out = self.prog(u["backward"])(*[val(a) for a in u["args"]], h[i], *saved[i], g)
            g = out[0]
            acc(u["grads"], out[1:])
        acc(pro["grads"], self.prog(pro["backward"])(*[val(a) for a in pro["args"]], g))
        return loss, grads


def steps(pkg, model_py, n, tol):
    c = Compiled(pkg)
    model = load(model_py)
    batch = c.m["inputs"][0]["shape"][0]
    g = torch.Generator().manual_seed(7)
    T = c.m["inputs"][0]["shape"][1]
    vocab = model.wte.num_embeddings
    seq = torch.randint(0, vocab, (n * batch, T + 1), generator=g)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dloss = dgrad = 0.0
    for s in range(n):
        x, y = seq[s * batch:(s + 1) * batch, :T], seq[s * batch:(s + 1) * batch, 1:]
        opt.zero_grad()
        ref = model.loss(x, y)
        ref.backward()
        loss, grads = c.step({"input": x, "target": y})
        missing = set(c.w) - set(grads)
        if missing:
            raise SystemExit(f"no gradient from the programs for {sorted(missing)}")
        # The gradients themselves, before either side steps: a wrong gradient shows here, not
        # only after lr has scaled it into the weights.
        ref_grads = {k: p.grad for k, p in model.named_parameters()}
        dgrad = max(dgrad, max((grads[k] - ref_grads[k]).abs().max().item() for k in grads))
        opt.step()
        with torch.no_grad():
            for k in grads:
                c.w[k] = c.w[k] - 0.1 * grads[k]
        dloss = max(dloss, abs(loss.item() - ref.item()))
    sd = model.state_dict()
    dw = max((sd[k] - v).abs().max().item() for k, v in c.w.items())
    print(f"{n} SGD steps: max |loss delta| {dloss:.3g}, max |gradient delta| {dgrad:.3g}, "
          f"max |weight delta| {dw:.3g} over {len(c.w)} tensors")
    return 0 if max(dloss, dgrad, dw) <= tol else 1


def make_data(d, rows):
    g = torch.Generator().manual_seed(11)
    from torchscript_golden import T, VOCAB
    seq = torch.randint(0, VOCAB, (rows, T + 1), generator=g)
    torch.save({"input": seq[:, :T].contiguous(), "target": seq[:, 1:].contiguous()}, os.path.join(d, "data.pt"))


def train(pkg, model_py, data_path, global_batch, steps, opt_name, lr, out):
    model = load(model_py)
    model.load_state_dict(load_file(os.path.join(pkg, "model.safetensors")), strict=True)
    data = torch.load(data_path)
    if opt_name == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=lr)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    model.train()
    for s in range(steps):
        x = data["input"][s * global_batch:(s + 1) * global_batch]
        y = data["target"][s * global_batch:(s + 1) * global_batch]
        if len(x) < global_batch:
            raise SystemExit(f"{data_path} has rows for {s} steps of {global_batch}, not {steps}")
        opt.zero_grad()
        model.loss(x, y).backward()
        opt.step()
    torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, out)


if __name__ == "__main__":
    if sys.argv[1] == "model":
        write_model(sys.argv[2])
    elif sys.argv[1] == "data":
        sys.path.insert(0, os.path.join(HERE, "..", "trainer"))
        make_data(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "train":
        a = sys.argv[2:]
        train(a[0], a[1], a[2], int(a[3]), int(a[4]), a[5], float(a[6]), a[7])
    elif sys.argv[1] == "steps":
        sys.exit(steps(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]) if len(sys.argv) > 5 else 1e-5))
    else:
        raise SystemExit(__doc__)
