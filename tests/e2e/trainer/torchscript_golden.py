"""Golden reference for TorchScript training (tests/e2e/trainer/test_torchscript_*.sh).

  make-lm DIR        a small GPT-style transformer (no BatchNorm) scripted into DIR/net.pt, its
                     token data in DIR/data.pt (torch.save({"input", "target"})), and plain
                     PyTorch's weights after 10 steps of SGD and of AdamW at world 1 with the
                     same data order (DIR/ref_sgd.pt, DIR/ref_adamw.pt)
  make-resnet DIR    torchvision's resnet18 (10 classes) scripted, 32x32 images, and PyTorch's
                     weights after 10 SGD steps (DIR/ref_sgd.pt, buffers included)
  make-sdpa DIR      make-lm's transformer with nanoGPT's attention: F.scaled_dot_product_attention
                     (PyTorch 2.x only), references for SGD and AdamW
  make-mha DIR       the same with nn.MultiheadAttention (batch_first, causal mask)
  make-vit DIR       torchvision's VisionTransformer (2 layers, 32x32 images, 10 classes),
                     references for SGD and AdamW
  compare REF GOT TOL [--buffers] [--key-bias-tol=B]
                     max |REF - GOT| over the parameters (and buffers) of two state dicts, or
                     of GOT's model.scripted.pt; exit 1 above TOL. --key-bias-tol compares the key
                     third of nn.MultiheadAttention's in_proj_bias (zero true gradient: noise that
                     AdamW amplifies) against B instead
The reference uses global batch GLOBAL samples per step, rows taken in file order (mtrain with
data.shuffle false reads exactly these rows per step at every world size).
"""
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

# One thread, as the tests run mtrain (train.threads=1): oneDNN's convolutions sum in another
# order on two threads, and resnet18 with BatchNorm on batches of 6 turns that rounding into
# 7.5 in a running variance after 10 steps (PyTorch 2.x); on one thread mtrain equals it exactly.
torch.set_num_threads(1)

STEPS = 10
GLOBAL = 6
VOCAB, T, EMBD, HEADS, LAYERS = 32, 8, 16, 2, 2


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        # No bias on q/k/v: the key bias has an exactly zero gradient (softmax ignores a constant
        # added to every score), and AdamW turns its rounding noise into full-size steps, which
        # would compare noise, not training (observed: 1e-4 after 10 steps at world 1).
        self.c_attn = nn.Linear(EMBD, 3 * EMBD, bias=False)
        self.c_proj = nn.Linear(EMBD, EMBD)
        self.n_head = HEADS

    def forward(self, x):
        B, L, C = x.shape
        nh = self.n_head
        q, k, v = self.c_attn(x).split(C, 2)
        hd = C // nh
        q = q.reshape(B, L, nh, hd).transpose(1, 2)
        k = k.reshape(B, L, nh, hd).transpose(1, 2)
        v = v.reshape(B, L, nh, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        future = torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(future, float("-inf")).softmax(-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, L, C))


class SdpaAttention(nn.Module):
    """nanoGPT's CausalSelfAttention on PyTorch 2.x: one fused scaled_dot_product_attention."""

    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(EMBD, 3 * EMBD, bias=False)
        self.c_proj = nn.Linear(EMBD, EMBD)
        self.n_head = HEADS

    def forward(self, x):
        B, L, C = x.shape
        nh = self.n_head
        q, k, v = self.c_attn(x).split(C, 2)
        q = q.view(B, L, nh, C // nh).transpose(1, 2)
        k = k.view(B, L, nh, C // nh).transpose(1, 2)
        v = v.view(B, L, nh, C // nh).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, L, C))


class MhaAttention(nn.Module):
    """nn.MultiheadAttention, as ported models hold it (TorchScript cannot script it without its
    input-projection bias, so the key bias's zero gradient is there: see Attention)."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(EMBD, HEADS, batch_first=True)

    def forward(self, x):
        L = x.size(1)
        future = torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1)
        return self.mha(x, x, x, attn_mask=future, need_weights=False)[0]


ATTENTION = {"manual": Attention, "sdpa": SdpaAttention, "mha": MhaAttention}


class Block(nn.Module):
    def __init__(self, attention: str = "manual"):
        super().__init__()
        self.ln_1 = nn.LayerNorm(EMBD)
        self.attn = ATTENTION[attention]()
        self.ln_2 = nn.LayerNorm(EMBD)
        self.mlp = nn.Sequential(nn.Linear(EMBD, 4 * EMBD), nn.GELU(), nn.Linear(4 * EMBD, EMBD))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TinyGPT(nn.Module):
    def __init__(self, attention: str = "manual"):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, EMBD)
        self.wpe = nn.Embedding(T, EMBD)
        self.blocks = nn.ModuleList([Block(attention) for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(EMBD)
        self.lm_head = nn.Linear(EMBD, VOCAB, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for b in self.blocks:
            x = b(x)
        return self.lm_head(self.ln_f(x))

    @torch.jit.export
    def loss(self, idx, target):
        logits = self.forward(idx)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1))


def train_reference(model, data, opt, loss_fn):
    model.train()
    for s in range(STEPS):
        x = data["input"][s * GLOBAL:(s + 1) * GLOBAL]
        y = data["target"][s * GLOBAL:(s + 1) * GLOBAL]
        opt.zero_grad()
        loss_fn(model, x, y).backward()
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def make_lm(d, attention="manual"):
    torch.manual_seed(1)
    net = TinyGPT(attention)
    torch.jit.save(torch.jit.script(net), f"{d}/net.pt")
    seq = torch.randint(0, VOCAB, (STEPS * GLOBAL, T + 1))
    data = {"input": seq[:, :T].contiguous(), "target": seq[:, 1:].contiguous()}
    torch.save(data, f"{d}/data.pt")
    lm = lambda m, x, y: m.loss(x, y)
    m = torch.jit.load(f"{d}/net.pt")  # exactly the file mtrain starts from
    torch.save(train_reference(m, data, torch.optim.SGD(m.parameters(), lr=0.1), lm), f"{d}/ref_sgd.pt")
    m = torch.jit.load(f"{d}/net.pt")
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    torch.save(train_reference(m, data, opt, lm), f"{d}/ref_adamw.pt")


def make_resnet(d):
    import torchvision
    torch.manual_seed(2)
    net = torchvision.models.resnet18(num_classes=10)
    torch.jit.save(torch.jit.script(net), f"{d}/net.pt")
    n = STEPS * GLOBAL
    y = torch.randint(0, 10, (n,))
    prototypes = torch.randn(10, 3, 32, 32)  # one pattern per class, plus noise: learnable fast
    x = prototypes[y] + 0.5 * torch.randn(n, 3, 32, 32)
    torch.save({"input": x, "target": y}, f"{d}/data.pt")
    ce = lambda m, a, b: F.cross_entropy(m(a), b)
    m = torch.jit.load(f"{d}/net.pt")
    torch.save(train_reference(m, {"input": x, "target": y}, torch.optim.SGD(m.parameters(), lr=0.05), ce),
               f"{d}/ref_sgd.pt")


def make_vit(d):
    import torchvision
    torch.manual_seed(3)
    net = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                               hidden_dim=32, mlp_dim=64, num_classes=10)
    torch.jit.save(torch.jit.script(net), f"{d}/net.pt")
    n = STEPS * GLOBAL
    y = torch.randint(0, 10, (n,))
    prototypes = torch.randn(10, 3, 32, 32)
    x = prototypes[y] + 0.5 * torch.randn(n, 3, 32, 32)
    data = {"input": x, "target": y}
    torch.save(data, f"{d}/data.pt")
    ce = lambda m, a, b: F.cross_entropy(m(a), b)
    m = torch.jit.load(f"{d}/net.pt")
    torch.save(train_reference(m, data, torch.optim.SGD(m.parameters(), lr=0.1), ce), f"{d}/ref_sgd.pt")
    m = torch.jit.load(f"{d}/net.pt")
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    torch.save(train_reference(m, data, opt, ce), f"{d}/ref_adamw.pt")


def load_weights(path):
    try:
        return {k: v for k, v in torch.jit.load(path).state_dict().items()}
    except Exception:  # not a TorchScript archive (PyTorch 2.x raises other types than RuntimeError)
        pass
    # mtrain's model.pt is written by LibTorch's pickler, which tags the dict's types with
    # torch.jit._pickle.restore_type_tag: PyTorch >= 2.6's weights-only torch.load needs that one
    # global allowed (docs/your-model.md).
    try:
        from torch.jit._pickle import restore_type_tag as tag
    except ImportError:
        tag = None
    if tag is not None and hasattr(torch.serialization, "safe_globals"):
        with torch.serialization.safe_globals([tag]):
            return torch.load(path)
    return torch.load(path)


def compare(ref_path, got_path, tol, buffers, key_bias_tol=None):
    ref, got = torch.load(ref_path), load_weights(got_path)
    # model.pt holds the parameters; a scripted module's state_dict has the buffers as well.
    keys = list(got.keys()) if buffers else [k for k in got if k in ref and ref[k].is_floating_point()]
    worst, where, key_bias = 0.0, "", 0.0
    for k in keys:
        if k not in ref:
            print(f"{got_path}: unexpected tensor {k}")
            return 1
        a, b = ref[k].double(), got[k].double()
        if a.shape != b.shape:
            print(f"{k}: shape {tuple(b.shape)}, reference {tuple(a.shape)}")
            return 1
        if key_bias_tol is not None and k.endswith("in_proj_bias"):
            # nn.MultiheadAttention's packed [q; k; v] bias: the key third's true gradient is 0
            # (softmax ignores a constant added to every score), so both sides hold rounding
            # noise there, which AdamW scales up to steps of about lr each. Compared on its own.
            e = a.numel() // 3
            key_bias = max(key_bias, (a[e:2 * e] - b[e:2 * e]).abs().max().item())
            a, b = torch.cat([a[:e], a[2 * e:]]), torch.cat([b[:e], b[2 * e:]])
        diff = (a - b).abs().max().item() if a.numel() else 0.0
        if diff > worst:
            worst, where = diff, k
    missing = [k for k in ref if k not in got and (buffers or ref[k].is_floating_point())]
    if not buffers:
        missing = [k for k in missing if "running_" not in k and "num_batches" not in k]
    if missing:
        print(f"{got_path}: missing {missing}")
        return 1
    extra = ""
    if key_bias_tol is not None:
        extra = f"; key-bias thirds (zero true gradient) {key_bias:.3e}, bound {key_bias_tol:g}"
    print(f"max abs diff {worst:.3e} ({where}) over {len(keys)} tensors, tolerance {tol:g}{extra}")
    return 0 if worst <= tol and (key_bias_tol is None or key_bias <= key_bias_tol) else 1


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "make-lm":
        make_lm(sys.argv[2])
    elif cmd in ("make-sdpa", "make-mha"):
        make_lm(sys.argv[2], cmd[len("make-"):])
    elif cmd == "make-vit":
        make_vit(sys.argv[2])
    elif cmd == "make-resnet":
        make_resnet(sys.argv[2])
    elif cmd == "compare":
        kb = [float(a.split("=", 1)[1]) for a in sys.argv[5:] if a.startswith("--key-bias-tol=")]
        sys.exit(compare(sys.argv[2], sys.argv[3], float(sys.argv[4]), "--buffers" in sys.argv[5:], kb[0] if kb else None))
    else:
        sys.exit(f"unknown command {cmd}")
