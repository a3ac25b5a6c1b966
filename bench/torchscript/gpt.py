"""The built-in gpt (lib/trainer/model/gpt.cpp) written in PyTorch and scripted, same shape and
parameter names: wte, wpe, blocks.<i>.{ln_1, attn.{c_attn, c_proj}, ln_2, mlp.{c_fc, c_proj}},
ln_f, lm_head (untied, no bias); exact GELU; attention by matmuls and a causal mask, or (ATTENTION
sdpa, nanoGPT's: bench/compiled) one causal F.scaled_dot_product_attention; the weights are the
same either way.
Usage: gpt.py OUT.pt N_LAYER N_HEAD N_EMBD BLOCK_SIZE VOCAB [ATTENTION: matmul (default) | sdpa]"""
import math
import sys

import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, sdpa: bool = False):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.sdpa = sdpa

    def forward(self, x):
        B, T, C = x.shape
        nh = self.n_head
        hd = C // nh
        q, k, v = self.c_attn(x).split(C, 2)
        q = q.reshape(B, T, nh, hd).transpose(1, 2)
        k = k.reshape(B, T, nh, hd).transpose(1, 2)
        v = v.reshape(B, T, nh, hd).transpose(1, 2)
        if self.sdpa:
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).reshape(B, T, C))
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(future, float("-inf")).softmax(-1)
        return self.c_proj(torch.matmul(att, v).transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, n_embd: int):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(torch.nn.functional.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, sdpa: bool = False):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, sdpa)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, n_layer: int, n_head: int, n_embd: int, block_size: int, vocab: int, sdpa: bool = False):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head, sdpa) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        for name, p in self.named_parameters():  # GPT-2 init, as gpt.cpp
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layer))
            elif p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith("bias") and "ln" not in name:
                nn.init.zeros_(p)

    def forward(self, idx):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for b in self.blocks:
            x = b(x)
        return self.lm_head(self.ln_f(x))


if __name__ == "__main__":
    out, L, H, E, T, V = sys.argv[1], *map(int, sys.argv[2:7])
    attention = sys.argv[7] if len(sys.argv) > 7 else "matmul"
    if attention not in ("matmul", "sdpa"):
        raise SystemExit(f"gpt.py: ATTENTION is matmul or sdpa, not {attention!r}")
    torch.manual_seed(0)
    torch.jit.save(torch.jit.script(GPT(L, H, E, T, V, attention == "sdpa")), out)
