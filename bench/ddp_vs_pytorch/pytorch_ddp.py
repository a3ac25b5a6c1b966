"""PyTorch's own DDP (gloo, CPU) on the workload mtrain's bench trains: the mtrain `mlp`
(input_dim -> hidden x (depth-1) -> classes, GELU between, cross-entropy), synthetic Gaussian
features labelled by a fixed random linear teacher, AdamW, the same per-rank batch and threads.
Started by hand per rank with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (no torchrun).
Rank 0 writes {"step_time_median_s": ..., "steps": ...} to --out."""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--input-dim", type=int, default=512)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--bucket-mb", type=float, default=25)
    p.add_argument("--out", required=True)
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()

    layers = []
    for i in range(a.depth):
        fan_in = a.input_dim if i == 0 else a.hidden
        fan_out = a.classes if i == a.depth - 1 else a.hidden
        layers.append(nn.Linear(fan_in, fan_out))
        if i + 1 < a.depth:
            layers.append(nn.GELU())
    model = DDP(nn.Sequential(*layers), bucket_cap_mb=a.bucket_mb)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)

    g = torch.Generator().manual_seed(0)
    teacher = torch.randn(a.input_dim, a.classes, generator=g)
    n = 4096
    x_all = torch.randn(n, a.input_dim, generator=g)
    y_all = (x_all @ teacher).argmax(1)
    perm = torch.randperm(n, generator=g)

    times = []
    per_rank = n // world
    for step in range(a.steps):
        t0 = time.perf_counter()
        pos = (step * a.batch) % (per_rank - a.batch)
        idx = perm[rank::world][pos:pos + a.batch]
        x, y = x_all[idx], y_all[idx]
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
        times.append(time.perf_counter() - t0)
    dist.barrier()
    if rank == 0:
        med = statistics.median(times[1:] if len(times) > 2 else times)
        with open(a.out, "w") as f:
            json.dump({"step_time_median_s": med, "steps": a.steps}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
