"""PyTorch 2.x's side of bench/peers/run.sh: the gpt of bench/torchscript/gpt.py (the Python class
the TorchScript file mtrain trains was scripted from, with that file's initial weights), trained
under torchrun by PyTorch DDP, FSDP2 or DeepSpeed ZeRO-N with AdamW at a constant lr, on the rows
of the tensors file mtrain reads (DistributedSampler, shuffle off: mtrain's order).

  torchrun --nproc_per_node W pytorch_train.py MODE GPT_PT DATA_PT OUT_JSON STEPS WARMUP BATCH THREADS L H E T V

MODE: ddp | fsdp2 (fully_shard per Block, then the root) | zero1 | zero2 | zero3. Each rank times
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torchscript"))
import gpt as gpt_module  # noqa: E402


def main():
    mode, gpt_pt, data_pt, out = sys.argv[1:5]
    steps, warmup, batch, threads, L, H, E, T, V = map(int, sys.argv[5:14])
    torch.set_num_threads(threads)
    if mode.startswith("zero"):
        import deepspeed
        deepspeed.init_distributed(dist_backend="gloo")
    else:
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = gpt_module.GPT(L, H, E, T, V)
    model.load_state_dict(torch.jit.load(gpt_pt).state_dict())
    adamw = dict(lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    if mode == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.AdamW(model.parameters(), **adamw)
    elif mode == "fsdp2":
        from torch.distributed.fsdp import fully_shard
        for block in model.blocks:
            fully_shard(block)
        fully_shard(model)
        opt = torch.optim.AdamW(model.parameters(), **adamw)
    elif mode in ("zero1", "zero2", "zero3"):
        import deepspeed
        config = {"train_micro_batch_size_per_gpu": batch, "gradient_accumulation_steps": 1,
                  "gradient_clipping": 0.0, "zero_allow_untested_optimizer": True,
                  "zero_optimization": {"stage": int(mode[-1])}}
        model, opt, _, _ = deepspeed.initialize(model=model, optimizer=torch.optim.AdamW(model.parameters(), **adamw),
                                                config=config)
    else:
        raise SystemExit(f"pytorch_train: unknown mode {mode!r}")
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
        if mode.startswith("zero"):
            model.backward(loss)
            model.step()
        else:
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
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
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
