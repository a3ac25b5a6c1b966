"""PyTorch 2.x's own distributed training of the golden TorchScript model (issue 28, item 4).

  torchrun --nproc_per_node W train_reference.py DIR MODE OPTS OUT_PREFIX

DIR holds net.pt and data.pt as tests/e2e/trainer/torchscript_golden.py make-lm writes them.
MODE is how PyTorch (or DeepSpeed) distributes the model:
  ddp      torch.nn.parallel.DistributedDataParallel over Gloo
  fsdp2    torch.distributed.fsdp.fully_shard on every Block, then on the root (FSDP2)
  zero1|zero2|zero3   deepspeed.initialize with that ZeRO stage (DeepSpeed's CPU accelerator)
OPTS is sgd (lr 0.1), adamw (lr 1e-3, no weight decay) or both, comma-separated: one training
each, from the same initial weights, in one process (a launch of PyTorch costs seconds). The model is
the Python class the archive was scripted from, loaded with the archive's own initial weights:
FSDP2 and DeepSpeed rewrite a module's parameters, which a ScriptModule does not allow. Rows come
from torch's DistributedSampler (shuffle off): rank r takes rows r, r+W, … — the order mtrain's
sampler uses — so the global batch of every step is the same six rows at every world size. Rank 0
writes each final full state dict to OUT_PREFIX_<opt>.pt.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, "..", "trainer"), os.path.join(here, "..", "..", "..", "python")]
import peers_wrap  # noqa: E402
import torchscript_golden as golden  # noqa: E402  (also pins one thread, as the tests run mtrain)


def build(d):
    model = golden.TinyGPT("manual")
    model.load_state_dict(torch.jit.load(os.path.join(d, "net.pt")).state_dict())
    return model


def make_optimizer(name, params):
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1)
    return torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)


def lm_loss(logits, target):
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1))


def full_state(mode, model):
    """The whole state dict on rank 0 (None elsewhere); collective on every rank."""
    if mode == "fsdp2":
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
        state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    elif mode == "zero3":
        import deepspeed
        with deepspeed.zero.GatheredParameters(list(model.module.parameters())):
            state = {k: v.detach().clone() for k, v in model.module.state_dict().items()}
    else:
        inner = model.module
        state = {k: v.detach().clone() for k, v in inner.state_dict().items()}
    return state if dist.get_rank() == 0 else None


def train(d, mode, opt_name, rank, world):
    """One training of STEPS steps; returns the full state dict on rank 0 and the losses."""
    per_rank = golden.GLOBAL // world
    data = torch.load(os.path.join(d, "data.pt"))
    dataset = torch.utils.data.TensorDataset(data["input"], data["target"])
    sampler = torch.utils.data.distributed.DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=False)
    loader = torch.utils.data.DataLoader(dataset, batch_size=per_rank, sampler=sampler)
    model, opt = peers_wrap.wrap(mode, build(d), lambda params: make_optimizer(opt_name, params), per_rank,
                                 {"stage3_param_persistence_threshold": 0})
    model.train()
    losses = []
    for step, (x, y) in enumerate(loader):
        if step == golden.STEPS:
            break
        loss = lm_loss(model(x), y)
        peers_wrap.step(mode, model, opt, loss)
        losses.append(loss.item())
    return full_state(mode, model), losses


def main():
    d, mode, opts, prefix = sys.argv[1:5]
    peers_wrap.init_process_group(mode)
    rank, world = dist.get_rank(), dist.get_world_size()
    if golden.GLOBAL % world:
        raise SystemExit(f"train_reference: global batch {golden.GLOBAL} is not divisible by world {world}")
    for opt_name in opts.split(","):
        state, losses = train(d, mode, opt_name, rank, world)
        if rank == 0:
            torch.save(state, f"{prefix}_{opt_name}.pt")
            print(f"train_reference {mode} {opt_name} world {world}: losses", " ".join(f"{v:.6f}" for v in losses),
                  flush=True)
        dist.barrier()
    peers_wrap.end_process()


if __name__ == "__main__":
    main()
