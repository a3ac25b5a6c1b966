"""Two TorchScript models for the estimate's accuracy tests (tests/e2e/estimate/accuracy.sh).

  make_models.py lm DIR      a GPT-style transformer (6 blocks "Block", width 512, vocab 2048,
                             64 tokens; Ψ 21.0M), scripted into DIR/lm.pt, its tokens in
                             DIR/lm_data.pt
  make_models.py conv DIR    a ResNet-style convolutional net with BatchNorm (4 blocks
                             "ResBlock", 384 channels, 8x8 images, 10 classes; Ψ 10.6M) in
                             DIR/conv.pt, images in DIR/conv_data.pt
Sizes: model state (16 bytes per parameter under DDP) is a large part of each rank's peak, beside
the worker's own ~450 MiB, and a step still takes well under a second on one core.
"""
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, T, EMBD, HEADS, LAYERS = 2048, 64, 512, 8, 6
CHANNELS, IMAGE = 384, 8


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(EMBD, 3 * EMBD)
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


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(EMBD)
        self.attn = Attention()
        self.ln_2 = nn.LayerNorm(EMBD)
        self.mlp = nn.Sequential(nn.Linear(EMBD, 4 * EMBD), nn.GELU(), nn.Linear(4 * EMBD, EMBD))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, EMBD)
        self.wpe = nn.Embedding(T, EMBD)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(EMBD)
        self.lm_head = nn.Linear(EMBD, VOCAB, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for b in self.blocks:
            x = b(x)
        return self.lm_head(self.ln_f(x))


class ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class Conv(nn.Module):
    def __init__(self, c=CHANNELS):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)
        self.blocks = nn.Sequential(*[ResBlock(c) for _ in range(4)])
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.stem(x)))
        x = self.blocks(x)
        return self.fc(x.mean(dim=(2, 3)))


def main():
    what, out = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    if what == "lm":
        torch.jit.save(torch.jit.script(LM()), f"{out}/lm.pt")
        toks = torch.randint(0, VOCAB, (64, T + 1))
        torch.save({"input": toks[:, :-1].contiguous(), "target": toks[:, 1:].contiguous()}, f"{out}/lm_data.pt")
    else:
        torch.jit.save(torch.jit.script(Conv()), f"{out}/conv.pt")
        torch.save({"input": torch.randn(64, 3, IMAGE, IMAGE), "target": torch.randint(0, 10, (64,))}, f"{out}/conv_data.pt")


if __name__ == "__main__":
    main()
