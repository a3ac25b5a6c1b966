"""mtrain's built-in gpt (lib/trainer/model/gpt.cpp) in PyTorch, trained under FSDP2: each Block
and then the whole model wrapped with fully_shard (bf16 parameters, fp32 reduce when
--precision bf16), AdamW, synthetic tokens. Run by bench/gpu/compare.py under torchrun; writes
{"step_s", "peak_bytes", "params"} (rank 0) to --out."""
import argparse
import json
import math
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(s, C, nh):
        super().__init__()
        s.c_attn, s.c_proj, s.nh = nn.Linear(C, 3 * C), nn.Linear(C, C), nh

    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.c_attn(x).split(C, 2)
        q, k, v = (t.reshape(B, T, s.nh, C // s.nh).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // s.nh))
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf")).softmax(-1)
        return s.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    def __init__(s, C, nh):
        super().__init__()
        s.ln_1, s.attn, s.ln_2 = nn.LayerNorm(C), Attention(C, nh), nn.LayerNorm(C)
        s.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))

    def forward(s, x):
        x = x + s.attn(s.ln_1(x))
        return x + s.mlp(s.ln_2(x))


class GPT(nn.Module):
    def __init__(s, a):
        super().__init__()
        s.wte, s.wpe = nn.Embedding(a.vocab, a.embd), nn.Embedding(a.block, a.embd)
        s.blocks = nn.ModuleList([Block(a.embd, a.heads) for _ in range(a.layers)])
        s.ln_f, s.lm_head = nn.LayerNorm(a.embd), nn.Linear(a.embd, a.vocab, bias=False)

    def forward(s, idx):
        x = s.wte(idx) + s.wpe(torch.arange(idx.size(1), device=idx.device))
        for b in s.blocks:
            x = b(x)
        return s.lm_head(s.ln_f(x))


def main():
    p = argparse.ArgumentParser()
    for k, v in (("steps", 30), ("warmup", 5), ("layers", 12), ("embd", 768), ("heads", 12), ("vocab", 50304),
                 ("block", 1024), ("batch", 8)):
        p.add_argument(f"--{k}", type=int, default=v)
    p.add_argument("--device", default="cuda")
    p.add_argument("--precision", default="bf16")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    cuda = a.device == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, local = dist.get_rank(), int(os.environ.get("LOCAL_RANK", 0))
    dev = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)
    torch.manual_seed(0)
    model = GPT(a).to(dev)
    n_params = sum(t.numel() for t in model.parameters())
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if a.precision == "bf16" else MixedPrecisionPolicy()
    for b in model.blocks:
        fully_shard(b, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    times = []
    for step in range(a.steps):
        idx = torch.randint(0, a.vocab, (a.batch, a.block + 1), device=dev)
        t0 = time.perf_counter()
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, a.vocab), idx[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
    peak = torch.cuda.max_memory_allocated(dev) if cuda else 0
    if not cuda:
        import resource
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if rank == 0:
        json.dump({"step_s": statistics.median(times), "peak_bytes": peak, "params": n_params}, open(a.out, "w"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
