"""How PyTorch 2.x itself (or DeepSpeed) distributes a model, for the scripts that run it beside
mtrain (tests/e2e/peers/train_reference.py: numerics; bench/peers/pytorch_train.py: speed). One
definition of each mode, so the test and the bench compare mtrain against the same thing:
  ddp      torch.nn.parallel.DistributedDataParallel over Gloo
  fsdp2    torch.distributed.fsdp.fully_shard on every Block (model.blocks), then on the root
  zeroN    deepspeed.initialize with ZeRO stage N (DeepSpeed's CPU accelerator, Gloo)
"""
import os
import sys

import torch
import torch.distributed as dist

MODES = ("ddp", "fsdp2", "zero1", "zero2", "zero3")


def init_process_group(mode):
    if mode not in MODES:
        raise SystemExit(f"unknown mode {mode!r} ({', '.join(MODES)})")
    if mode.startswith("zero"):
        import deepspeed
        deepspeed.init_distributed(dist_backend="gloo")
    else:
        dist.init_process_group("gloo")


def wrap(mode, model, make_optimizer, per_rank, zero_options=None):
    """(model, optimizer) distributed by MODE; make_optimizer(params) builds the torch optimizer."""
    if mode == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model)
        return model, make_optimizer(model.parameters())
    if mode == "fsdp2":
        from torch.distributed.fsdp import fully_shard
        for block in model.blocks:
            fully_shard(block)
        fully_shard(model)
        return model, make_optimizer(model.parameters())
    import deepspeed
    config = {"train_micro_batch_size_per_gpu": per_rank, "gradient_accumulation_steps": 1,
              "gradient_clipping": 0.0, "zero_allow_untested_optimizer": True,
              "zero_optimization": {"stage": int(mode[-1]), **(zero_options or {})}}
    model, opt, _, _ = deepspeed.initialize(model=model, optimizer=make_optimizer(model.parameters()), config=config)
    return model, opt


def step(mode, model, opt, loss):
    """Backward and optimizer step, the way MODE's own API does it."""
    if mode.startswith("zero"):
        model.backward(loss)
        model.step()
    else:
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def end_process(code=0):
    """Destroy the default group and end the process without the interpreter's finalization.

    Why not return from main: DTensor's global sharding caches keep FSDP2's DeviceMesh, and with it
    the Gloo group, alive until finalization, and a Gloo worker thread drops the last barrier's work
    (which holds the earlier all-gathers' tensors, Python objects) only after the barrier has returned.
    When that drop falls in finalization the thread cannot take the GIL, unwinds through a noexcept
    destructor and the rank aborts ("terminate called without an active exception", SIGABRT) after
    its results were written: seen 2 in 39 world-3 FSDP2 runs on a loaded machine (PyTorch 2.15,
    tests/e2e/peers/test_numerics FLAKY). Every file is written and closed before this is called.
    """
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
