# Joins the group through env:// with gloo and checks the sum of all ranks.
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
assert t.item() == world * (world + 1) / 2
print(f"rank {rank}/{world} node {os.environ['GROUP_RANK']} local {os.environ['LOCAL_RANK']}: all_reduce ok", flush=True)
dist.destroy_process_group()
