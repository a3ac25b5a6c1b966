# Writes corpus/torchscript_trust/seed*.txt: the code records of real archives (torch.jit.save by
# the pinned PyTorch) that fuzz_torchscript_trust mutates. A seed is its records, each after a
# `#@record NAME` line.   .venv/bin/python tests/fuzz/seed_trust_corpus.py tests/fuzz/corpus/torchscript_trust
import io, sys, zipfile, torch, torch.nn as nn, torch.nn.functional as F
from typing import Tuple
out = sys.argv[1]
class Restore(nn.Module):
    def __init__(s):
        super().__init__(); s.l = nn.Linear(4, 3)
    def forward(s, x):
        return F.relu(s.l(x))
    @torch.jit.export
    def __getstate__(s) -> Tuple[torch.Tensor, torch.Tensor, bool]:
        return (s.l.weight, s.l.bias, s.training)
    @torch.jit.export
    def __setstate__(s, state: Tuple[torch.Tensor, torch.Tensor, bool]):
        s.l.weight.copy_(state[0]); s.l.bias.copy_(state[1]); s.training = state[2]
class Evil(nn.Module):
    def __init__(s):
        super().__init__(); s.l = nn.Linear(4, 3); s.where = "/tmp/x"
    def forward(s, x):
        return s.l(x)
    @torch.jit.export
    def __getstate__(s) -> Tuple[torch.Tensor, bool, str]:
        return (s.l.weight, s.training, s.where)
    @torch.jit.export
    def __setstate__(s, state: Tuple[torch.Tensor, bool, str]):
        t = torch.from_file(state[2], shared=True, size=4)
        s.where = state[2]
        s.training = state[1] and t.numel() == 4
class Cls(nn.Module):
    def __init__(s):
        super().__init__(); s.emb = nn.Embedding(16, 8); s.enc = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True); s.head = nn.Linear(8, 4)
    def forward(s, x):
        h = s.enc(s.emb(x))
        return s.head(h.mean(1))
    @torch.jit.export
    def loss(s, x, t):
        return F.cross_entropy(s.forward(x), t)
class Conv(nn.Module):
    def __init__(s):
        super().__init__(); s.c = nn.Conv2d(3, 4, 3); s.bn = nn.BatchNorm2d(4); s.d = nn.Dropout(0.1)
    def forward(s, x):
        y = s.d(torch.flatten(F.adaptive_avg_pool2d(F.gelu(s.bn(s.c(x))), 1), 1))
        for i in range(2):
            if y.sum() > 0:
                y = y * 2
        return y
for i, m in enumerate([Restore(), Evil(), Cls(), Conv()]):
    b = io.BytesIO(); torch.jit.save(torch.jit.script(m), b)
    with zipfile.ZipFile(b) as z, open(f"{out}/seed{i}.txt", "w") as f:
        for n in z.namelist():
            rel = n.split("/", 1)[1]
            if rel.startswith("code/") and rel.endswith(".py"):
                f.write(f"#@record {rel}\n"); f.write(z.read(n).decode())
