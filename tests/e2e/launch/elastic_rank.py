# Rank program of test_elastic_restart.sh. Every rank appends one line per start to $LOG:
#   restart=<TORCHELASTIC_RESTART_COUNT> node=<GROUP_RANK> rank=<RANK> world=<WORLD_SIZE>
# MODE=fail-once: global rank 3 fails (exit 7) in the job's first attempt, after the group formed.
# MODE=hang-first: the first attempt sleeps (a node is killed meanwhile).
# Any later attempt: a gloo all_reduce across every node, checked, then exit 0.
import os
import sys
import time

restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
with open(os.environ["LOG"], "a") as f:
    f.write(f"restart={restart} node={os.environ['GROUP_RANK']} rank={rank} world={world}\n")
mode = os.environ["MODE"]
if restart == 0 and mode == "hang-first":
    time.sleep(300)
    sys.exit(0)

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
assert dist.get_world_size() == world
if restart == 0 and mode == "fail-once":
    if rank == 3:
        print("rank 3 fails on purpose", flush=True)
        sys.exit(7)
    time.sleep(300)  # the others wait to be stopped
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
assert t.item() == world * (world + 1) / 2, t.item()
print(f"rank {rank}/{world} restart {restart}: all_reduce ok", flush=True)
dist.destroy_process_group()
