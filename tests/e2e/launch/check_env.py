# A torchrun-style worker: checks every variable of the rank environment (docs/architecture.md §3),
# joins the group through env:// with gloo, and all-reduces its rank.
import os
import sys

import torch
import torch.distributed as dist

required = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
            "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
            "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
            "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE", "OMP_NUM_THREADS",
            "CUDA_VISIBLE_DEVICES", "MTRAIN_JOB_ID", "MTRAIN_HOST", "MTRAIN_GPU"]
missing = [k for k in required if k not in os.environ]
assert not missing, f"missing: {missing}"
e = os.environ
rank, world, local = int(e["RANK"]), int(e["WORLD_SIZE"]), int(e["LOCAL_RANK"])
assert world == int(sys.argv[1]), (world, sys.argv)
assert local == rank and int(e["LOCAL_WORLD_SIZE"]) == world
assert e["GROUP_RANK"] == "0" and e["GROUP_WORLD_SIZE"] == "1"
assert e["ROLE_RANK"] == e["RANK"] and e["ROLE_WORLD_SIZE"] == e["WORLD_SIZE"]
assert e["ROLE_NAME"] == "trainer", e["ROLE_NAME"]
assert e["TORCHELASTIC_USE_AGENT_STORE"] == "False"
assert e["TORCHELASTIC_RESTART_COUNT"] == "0" and e["TORCHELASTIC_MAX_RESTARTS"] == "0"
assert e["TORCHELASTIC_RUN_ID"] == "e2e-run" and e["MTRAIN_JOB_ID"]
assert e["TORCHELASTIC_ERROR_FILE"].endswith(f"/attempt_0/{rank}/error.json")
assert int(e["OMP_NUM_THREADS"]) >= 1
assert e["CUDA_VISIBLE_DEVICES"] == "" and e["MTRAIN_GPU"] == ""
assert e["MASTER_ADDR"] == "127.0.0.1"

dist.init_process_group("gloo", init_method="env://")
assert dist.get_rank() == rank and dist.get_world_size() == world
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
expected = world * (world + 1) / 2
assert t.item() == expected, (t.item(), expected)
print(f"rank {rank}: env ok, all_reduce ok ({t.item():g})", flush=True)
dist.destroy_process_group()
