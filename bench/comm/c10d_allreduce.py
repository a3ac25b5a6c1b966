"""Baseline for `mtrain bench comm`: a plain c10d Gloo all-reduce loop in Python (Debian's
python3-torch), started by `mtrain launch` (torchrun environment, init_method env://).

Same measurement as mtrain-worker bench-comm: float32 tensors, `warmup` untimed calls, a barrier,
then `iters` timed calls; time per call = the slowest rank's mean; busbw = algbw * 2(N-1)/N.
Rank 0 prints one JSON line per size: {"bytes", "time_s", "busbw_gbps"}.

Usage: mtrain launch --nproc-per-node 2 -- /usr/bin/python3 bench/comm/c10d_allreduce.py \
           --sizes 1048576,67108864 [--iters 20] [--warmup 5]
"""
import argparse
import json
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--sizes", required=True, help="bytes, comma-separated")
p.add_argument("--iters", type=int, default=20)
p.add_argument("--warmup", type=int, default=5)
a = p.parse_args()

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
for size in [int(s) for s in a.sizes.split(",")]:
    t = torch.ones(size // 4, dtype=torch.float32)
    for _ in range(a.warmup):
        dist.all_reduce(t)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(a.iters):
        dist.all_reduce(t)
    mine = torch.tensor([(time.perf_counter() - t0) / a.iters], dtype=torch.float64)
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)
    secs = mine.item()
    if rank == 0:
        algbw = t.numel() * 4 / secs / 1e9
        print(json.dumps({"bytes": t.numel() * 4, "time_s": secs, "busbw_gbps": algbw * 2 * (world - 1) / world}), flush=True)
dist.destroy_process_group()
