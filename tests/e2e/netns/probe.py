# A rank for the multi-node tests: joins the gloo group through env://, checks an all_reduce,
# and reports what it received (argv, forwarded variables, whether the job token leaked into
# its environment). With --loop it keeps doing all_reduces (a node can then be killed mid-run).
import os
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
assert t.item() == world * (world + 1) / 2
e = os.environ
print(f"rank {rank}/{world} node {e['GROUP_RANK']} local {e['LOCAL_RANK']}/{e['LOCAL_WORLD_SIZE']} "
      f"host {e['MTRAIN_HOST']} master {e['MASTER_ADDR']}: all_reduce ok", flush=True)
print(f"rank {rank} args={sys.argv[1:]!r} FOO={e.get('FOO')!r} NCCL_DEBUG={e.get('NCCL_DEBUG')!r} "
      f"token_in_env={'MTRAIN_RDZV_TOKEN' in e}", flush=True)
if e.get("PROBE_FAIL_RANK") == str(rank):
    print(f"rank {rank} fails on purpose", file=sys.stderr, flush=True)
    sys.exit(3)
if "--loop" in sys.argv:
    while True:
        dist.all_reduce(t)
        time.sleep(0.2)
dist.destroy_process_group()
