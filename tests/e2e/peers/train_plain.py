# A plain torchrun-style script: init_process_group("gloo") from the environment, DDP, a
# deterministic regression, errors propagated by torch.distributed.elastic's @record (with
# TRAIN_FAIL_RANK=R rank R raises at step 5 and its traceback lands in TORCHELASTIC_ERROR_FILE).
# Rank 0 prints every loss and saves the final weights to $TRAIN_OUT/weights.pt.
import os

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP


@record
def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8, generator=g)
    y = 0.5 * (x[:, :4].sum(dim=1, keepdim=True) - x[:, 4:].sum(dim=1, keepdim=True))
    losses = []
    for step in range(30):
        if os.environ.get("TRAIN_FAIL_RANK") == str(rank) and step == 5:
            raise ValueError(f"train_plain: rank {rank} fails at step {step}")
        xb, yb = x[rank::world], y[rank::world]
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t = loss.detach().clone()
        dist.all_reduce(t)
        losses.append(t.item() / world)
    if rank == 0:
        print("losses", " ".join(f"{v:.6f}" for v in losses), flush=True)
        torch.save(model.module.state_dict(), os.path.join(os.environ["TRAIN_OUT"], "weights.pt"))
        assert losses[-1] < losses[0] * 0.9, losses
        print(f"train_plain: loss {losses[0]:.4f} -> {losses[-1]:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
