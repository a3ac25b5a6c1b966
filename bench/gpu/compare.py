"""mtrain's gpt under ddp / zero3 / fsdp beside PyTorch FSDP2 (fully_shard) on the same model,
batch and sequence: tokens/s, peak memory per rank and MFU, side by side in one run.

  python3 bench/gpu/compare.py --mtrain BUILD/bin/mtrain [--device cuda|cpu] [--precision bf16]
          [--steps 30] [--layers 12] [--embd 768] [--heads 12] [--vocab 50304] [--block 1024]
          [--batch 8] [--world N] [--out table.md]

The model is mtrain's built-in gpt (lib/trainer/model/gpt.cpp: GPT-2 layout, untied head,
matmul attention with a causal mask); the PyTorch side is the same module written in Python
(bench/gpu/gpt_fsdp2.py), trained with AdamW, wrapped block by block and then whole with
fully_shard, under torchrun. Both take the median step time after warm-up steps. MFU counts
6·N·tokens + the attention's 12·L·T·C per token against the device's dense bf16 peak
(--peak-tflops; H100 SXM 989, H200 989, A100 312). Used by scripts/gpu-check; on CPU
(--device cpu, small sizes) it checks that both sides run.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def peak_tflops(device):
    if device != "cuda":
        return 0.0
    import torch
    name = torch.cuda.get_device_name(0)
    for key, tf in (("H200", 989.0), ("H100", 989.0), ("A100", 312.0), ("L40", 181.0), ("A10", 125.0)):
        if key in name:
            return tf
    return 0.0


def flops_per_token(n_params, a):
    return 6 * n_params + 12 * a.layers * a.block * a.embd


def run_mtrain(a, strategy, world, work):
    wd = os.path.join(work, f"mtrain-{strategy}")
    cmd = [a.mtrain, "launch", "--nproc-per-node", str(world), "--master-port", "0", "--strategy", strategy,
           "--device", "gpu" if a.device == "cuda" else "cpu", "--precision", a.precision,
           "--max-steps", str(a.steps), "--work-dir", wd, "--data", "synthetic",
           "--set", f"model.n_layer={a.layers}", "--set", f"model.n_embd={a.embd}",
           "--set", f"model.n_head={a.heads}", "--set", f"model.vocab_size={a.vocab}",
           "--set", f"model.block_size={a.block}", "--set", f"train.batch_size={a.batch}",
           "--set", "optim.name=adamw", "--set", "data.val_fraction=0", "--set", f"train.timing_warmup_steps={a.warmup}"]
    if strategy == "fsdp":
        cmd += ["--set", "fsdp.wrap_module_types=Block"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": f"exit {r.returncode}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}", "cmd": cmd}
    s = json.load(open(os.path.join(wd, "summary.json")))
    return {"step_s": s["step_time_median_s"], "peak_bytes": s["peak_memory_bytes"], "params": s["num_params"],
            "cmd": cmd}


def run_fsdp2(a, world, work):
    out = os.path.join(work, "fsdp2.json")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(world),
           os.path.join(HERE, "gpt_fsdp2.py"), "--device", a.device, "--precision", a.precision,
           "--steps", str(a.steps), "--warmup", str(a.warmup), "--layers", str(a.layers), "--embd", str(a.embd),
           "--heads", str(a.heads), "--vocab", str(a.vocab), "--block", str(a.block), "--batch", str(a.batch),
           "--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": f"exit {r.returncode}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}", "cmd": cmd}
    res = json.load(open(out))
    res["cmd"] = cmd
    return res


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mtrain", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--precision", default="bf16")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--embd", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--block", type=int, default=1024)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--world", type=int, default=0)
    p.add_argument("--peak-tflops", type=float, default=0.0)
    p.add_argument("--out", default="")
    a = p.parse_args()
    world = a.world
    if world == 0:
        import torch
        world = min(torch.cuda.device_count(), 8) if a.device == "cuda" else 2
    peak = a.peak_tflops or peak_tflops(a.device)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for strategy in ("ddp", "zero3", "fsdp"):
            rows.append((f"mtrain {strategy}", run_mtrain(a, strategy, world, work)))
        rows.append(("PyTorch FSDP2 (fully_shard)", run_fsdp2(a, world, work)))
    tokens = a.batch * a.block * world
    lines = [f"bf16 gpt: {a.layers} layers, width {a.embd}, {a.heads} heads, vocab {a.vocab}, sequence {a.block}, "
             f"batch {a.batch}/rank, world {world}, AdamW, {a.steps} steps ({a.warmup} warm-up), device {a.device}",
             "", "| run | step s (median) | tokens/s | peak GiB/rank | MFU | vs FSDP2 tokens/s |", "|---|---|---|---|---|---|"]
    ref = next((r for n, r in rows if n.startswith("PyTorch") and "step_s" in r), None)
    for name, r in rows:
        if "error" in r:
            lines.append(f"| {name} | failed: {r['error']} | | | | |")
            continue
        tps = tokens / r["step_s"]
        mfu = (flops_per_token(r["params"], a) * tps / world / (peak * 1e12)) if peak else 0.0
        ratio = f"{(ref['step_s'] / r['step_s']):.2f}x" if ref else "-"
        lines.append(f"| {name} | {r['step_s']:.4f} | {tps:,.0f} | {r['peak_bytes'] / 2**30:.2f} | "
                     f"{mfu * 100:.1f}% | {ratio} |")
    lines += ["", "Commands:", ""] + [f"    {' '.join(r['cmd'])}" for _, r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        open(a.out, "w").write(text)
    return 0 if all("error" not in r for _, r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
