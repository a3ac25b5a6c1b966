"""PyTorch 2.x's side of bench/peers/run.sh: the gpt of bench/torchscript/gpt.py (the Python class
the TorchScript file mtrain trains was scripted from, with that file's initial weights), trained
under torchrun by PyTorch DDP, FSDP2 or DeepSpeed ZeRO-N with AdamW at a constant lr, on the rows
of the tensors file mtrain reads (DistributedSampler, shuffle off: mtrain's order).

  torchrun --nproc_per_node W pytorch_train.py MODE GPT_PT DATA_PT OUT_JSON STEPS WARMUP BATCH THREADS L H E T V [ATTENTION]

MODE: ddp | fsdp2 (fully_shard per Block, then the root) | zero1 | zero2 | zero3, and ddp+compile,
fsdp2+compile (bench/compiled): each Block torch.compile'd first, as torchtitan does, so that
FSDP2's hooks stay outside the compiled code. ATTENTION: gpt.py's (matmul, sdpa). Each rank times
its steps (forward, backward, optimizer step; the loss read back as mtrain reads it); rank 0
writes the largest per-rank median step time after WARMUP steps and the largest per-rank peak RSS
(getrusage ru_maxrss: the whole process, as mtrain's summary.json peak_memory_bytes on CPU).
"""
import json
import os
import resource
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, "..", "torchscript"), os.path.join(here, "..", "..", "python")]
import gpt as gpt_module  # noqa: E402
import peers_wrap  # noqa: E402


def main():
    mode, gpt_pt, data_pt, out = sys.argv[1:5]
    steps, warmup, batch, threads, L, H, E, T, V = map(int, sys.argv[5:14])
    attention = sys.argv[14] if len(sys.argv) > 14 else "matmul"
    mode, _, compiled = mode.partition("+")
    if compiled not in ("", "compile"):
        raise SystemExit(f"unknown mode suffix +{compiled} (+compile)")
    torch.set_num_threads(threads)
    peers_wrap.init_process_group(mode)
    rank, world = dist.get_rank(), dist.get_world_size()
    model = gpt_module.GPT(L, H, E, T, V, attention == "sdpa")
    model.load_state_dict(torch.jit.load(gpt_pt).state_dict())
    if compiled:
        for i, block in enumerate(model.blocks):
            model.blocks[i] = torch.compile(block, fullgraph=True)
    adamw = dict(lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    model, opt = peers_wrap.wrap(mode, model, lambda params: torch.optim.AdamW(params, **adamw), batch)
    data = torch.load(data_pt)
    dataset = torch.utils.data.TensorDataset(data["input"], data["target"])
    sampler = torch.utils.data.distributed.DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=False)
    loader = iter(torch.utils.data.DataLoader(dataset, batch_size=batch, sampler=sampler, drop_last=True))
    model.train()
    times = []
    for _ in range(steps):
        x, y = next(loader)
        t0 = time.perf_counter()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        peers_wrap.step(mode, model, opt, loss)
        loss.item()
        times.append(time.perf_counter() - t0)
    figures = torch.tensor([statistics.median(times[warmup:]),
                            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0], dtype=torch.float64)
    dist.all_reduce(figures, op=dist.ReduceOp.MAX)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"step_time_median_s": figures[0].item(), "peak_memory_bytes": int(figures[1].item()),
                       "final_loss": loss.item()}, f)
    dist.barrier()
    peers_wrap.end_process()


if __name__ == "__main__":
    main()
