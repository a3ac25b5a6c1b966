"""transformers GPT-2 and Llama and a timm ViT as compiled packages, for
tests/e2e/compiled/test_hf_compiled.sh (issue 47 items 1 and 3).

  prepare DIR ROWS   writes DIR/model.py, whose factories gpt2() and llama() return
                     tests/e2e/models/hf_models.py's tiny models (2 layers, hidden 32, vocab 64, 16
                     tokens, every dropout 0.0; GPT-2 with its tied embedding and lm_head) in its
                     Wrapper (ids in, logits out), and vit() a timm VisionTransformer (2 blocks,
                     hidden 32, 8x8 images in 4x4 patches, 10 classes); ROWS rows of data for each:
                     DIR/gpt2.pt, DIR/llama.pt (hf_models.data's token rows), DIR/vit.pt (noisy
                     images of 10 class prototypes); and DIR/cfg/config.json, GPT-2's config (for
                     model.hf_config).
  check DIR RUNS     one Python start for every comparison. Each line of RUNS (tab-separated):
                       LABEL  KIND  PKG  GLOBAL  STEPS  OPT  WD  TOL
                     eager PyTorch training of KIND from the package's model.safetensors, STEPS
                     steps of OPT (sgd: lr 0.1; adamw: hf_models.ADAMW) on GLOBAL rows per step in
                     file order, against mtrain's WD/model.pt: max |d| within TOL, and the reference
                     moved at least 10 x TOL from the package's weights (a comparison of weights that
                     did not move would prove nothing); or
                       hf  LABEL  WD  MODEL_PT_KIND
                     WD/hf (model.hf_config's output) loads with AutoModelForCausalLM.from_pretrained
                     with no missing or unexpected tensor, and its logits equal those of the KIND
                     wrapper holding WD/model.pt (bound 1e-5).
                     model.py also has gpt2_cache() (GPT-2 called with use_cache=True) and
                     learned_side() (blocks passed a tensor computed from a parameter), which the
                     exporter refuses.
                     Prints ok/FAIL per line; exits with the number of failures.
"""
import os
import sys
import warnings

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import hf_models  # noqa: E402  (tests/e2e/models: the TorchScript path's builders of the same models)

warnings.simplefilter("ignore")
torch.set_num_threads(1)
IMAGE, PATCH, CLASSES = 8, 4, 10

MODEL_PY = """import sys
import torch
sys.path.insert(0, {models!r})
import hf_models


def gpt2():
    return hf_models.Wrapper(hf_models.hf_model("gpt2"))


def llama():
    return hf_models.Wrapper(hf_models.hf_model("llama"))


def vit():
    from timm.models.vision_transformer import VisionTransformer
    torch.manual_seed(0)
    return VisionTransformer(img_size={image}, patch_size={patch}, num_classes={classes}, embed_dim=32, depth=2,
                             num_heads=2, mlp_ratio=2.0)


class CachedGPT2(torch.nn.Module):  # refused: its blocks get a DynamicCache object
    def __init__(self):
        super().__init__()
        self.model = hf_models.hf_model("gpt2")

    def forward(self, ids):
        return self.model(input_ids=ids, use_cache=True).logits


def gpt2_cache():
    return CachedGPT2()


class ScaledBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x, scale):
        return self.lin(x) * scale


class LearnedSide(torch.nn.Module):  # refused: a side tensor computed from a parameter
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(64, 8)
        self.scale = torch.nn.Parameter(torch.ones(8))
        self.blocks = torch.nn.ModuleList([ScaledBlock(), ScaledBlock()])
        self.head = torch.nn.Linear(8, 64)

    def forward(self, ids):
        h, scale = self.emb(ids), self.scale * 2
        for b in self.blocks:
            h = b(h, scale)
        return self.head(h)


def learned_side():
    return LearnedSide()
"""


def load_factory(d, kind):
    import importlib.util
    spec = importlib.util.spec_from_file_location("hf_compiled_model", os.path.join(d, "model.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, kind)()


def prepare(d, rows):
    with open(os.path.join(d, "model.py"), "w") as f:
        f.write(MODEL_PY.format(models=os.path.join(HERE, "..", "models"), image=IMAGE, patch=PATCH,
                                classes=CLASSES))
    for kind in ("gpt2", "llama"):
        torch.save(hf_models.data(kind, rows), os.path.join(d, f"{kind}.pt"))
    g = torch.Generator().manual_seed(5)
    y = torch.randint(0, CLASSES, (rows,), generator=g)
    prototypes = torch.randn(CLASSES, 3, IMAGE, IMAGE, generator=g)  # learnable: the weights move
    x = prototypes[y] + 0.5 * torch.randn(rows, 3, IMAGE, IMAGE, generator=g)
    torch.save({"input": x, "target": y}, os.path.join(d, "vit.pt"))
    hf_models.hf_model("gpt2").config.save_pretrained(os.path.join(d, "cfg"))


def package_weights(pkg):
    from safetensors.torch import load_file
    return load_file(os.path.join(pkg, "model.safetensors"))


def start(d, kind, pkg):
    """The factory's model with the package's weights (its tied twins filled by the tie itself)."""
    model = load_factory(d, kind)
    missing, unexpected = model.load_state_dict(package_weights(pkg), strict=False)
    tied = {n for n, _ in model.named_parameters(remove_duplicate=False)} - {n for n, _ in model.named_parameters()}
    if unexpected or set(missing) - tied:
        raise SystemExit(f"{pkg}/model.safetensors does not hold {kind}'s state: missing {missing}, "
                         f"unexpected {unexpected}")
    return model.train()


def reference(d, kind, pkg, global_batch, steps, opt_name):
    model = start(d, kind, pkg)
    data = torch.load(os.path.join(d, f"{kind}.pt"))
    opt = (torch.optim.SGD(model.parameters(), lr=hf_models.SGD_LR) if opt_name == "sgd"
           else torch.optim.AdamW(model.parameters(), **hf_models.ADAMW))
    for s in range(steps):
        x = data["input"][s * global_batch:(s + 1) * global_batch]
        y = data["target"][s * global_batch:(s + 1) * global_batch]
        if len(x) < global_batch:
            raise SystemExit(f"{kind}.pt has rows for {s} steps of {global_batch}, not {steps}")
        opt.zero_grad()
        out = model(x)
        loss = hf_models.lm_loss(out, y) if kind != "vit" else F.cross_entropy(out, y)
        loss.backward()
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def check_run(d, refs, label, kind, pkg, global_batch, steps, opt_name, wd, tol):
    key = (kind, pkg, global_batch, steps, opt_name)
    if key not in refs:
        refs[key] = reference(d, kind, pkg, int(global_batch), int(steps), opt_name)
    ref, got = refs[key], torch.load(os.path.join(wd, "model.pt"))
    missing = sorted(set(ref) - set(got))
    if missing:
        print(f"FAIL - {label}: {wd}/model.pt lacks {', '.join(missing)}")
        return 1
    key_bias, key_bound = 0.0, 0.0
    if opt_name == "adamw":
        # The key third of a packed [q; k; v] bias: its true gradient is 0 (softmax ignores a
        # constant added to every score of a row), so both sides hold rounding noise there, which
        # differs once Inductor reorders sums, and AdamW divides it by about eps: a step of up to
        # lr each. Compared on its own, within what AdamW can move it in the run.
        ref, got = dict(ref), dict(got)
        key_bound = hf_models.ADAMW["lr"] * int(steps)
        for k in [k for k in ref if k.endswith(("attn.qkv.bias", "attn.c_attn.bias"))]:
            e = ref[k].numel() // 3
            key_bias = max(key_bias, (ref[k][e:2 * e].double() - got[k][e:2 * e].double()).abs().max().item())
            ref[k], got[k] = torch.cat([ref[k][:e], ref[k][2 * e:]]), torch.cat([got[k][:e], got[k][2 * e:]])
    worst, where = hf_models.max_diff(ref, got)
    start = package_weights(pkg)
    moved, _ = hf_models.max_diff(ref, {**ref, **{k: v for k, v in start.items() if ref[k].shape == v.shape}})
    good = worst <= float(tol) and moved > 10 * float(tol) and key_bias <= key_bound
    keys = f"; the key biases {key_bias:.1e} (bound {key_bound:g})" if key_bound else ""
    print(f"{'ok' if good else 'FAIL'} - {label}: max |d| {worst:.1e} ({where or 'every tensor equal'}), tolerance "
          f"{float(tol):g}{keys}; the weights moved {moved:.1e}")
    return 0 if good else 1


def check_hf(d, label, wd, kind):
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging
    logging.disable_progress_bar()
    hf, info = AutoModelForCausalLM.from_pretrained(os.path.join(wd, "hf"), output_loading_info=True)
    wrapper = load_factory(d, kind)
    wrapper.load_state_dict(torch.load(os.path.join(wd, "model.pt")), strict=False)
    ids = torch.load(os.path.join(d, f"{kind}.pt"))["input"][:4]
    with torch.no_grad():
        diff = (hf.eval()(input_ids=ids).logits - wrapper.eval()(ids)).abs().max().item()
    bad = {k: v for k, v in info.items() if k in ("missing_keys", "unexpected_keys", "mismatched_keys") and v}
    good = not bad and diff <= 1e-5
    print(f"{'ok' if good else 'FAIL'} - {label}: from_pretrained({wd}/hf) {bad or 'holds every tensor'}, its logits "
          f"against mtrain's model.pt: max |d| {diff:.1e} (bound 1e-5)")
    return 0 if good else 1


def check(d, runs_path):
    refs, fails = {}, 0
    for line in open(runs_path):
        f = line.rstrip("\n").split("\t")
        fails += check_hf(d, f[1], f[2], f[3]) if f[0] == "hf" else check_run(d, refs, *f)
    return fails


if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "check":
        sys.exit(min(check(sys.argv[2], sys.argv[3]), 100))
    else:
        raise SystemExit(__doc__)
