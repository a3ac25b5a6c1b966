# A DeepSpeed script: deepspeed.initialize from a ds_config (--deepspeed_config FILE, as
# deepspeed.add_config_arguments parses it), ZeRO stage from that file, on CPU (DeepSpeed's CPU
# accelerator, Gloo) with a torch SGD optimizer. Rank 0 prints the epoch losses and saves the
# gathered weights to $TRAIN_OUT/weights.pt. Launched by `deepspeed --num_gpus 2 train_deepspeed.py
# --deepspeed_config ds.json` (DeepSpeed appends --local_rank=N) or the same words after mtrain.
import argparse
import os

import deepspeed
import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--local_rank", "--local-rank", type=int, default=-1)
    ap = deepspeed.add_config_arguments(ap)
    args = ap.parse_args()
    deepspeed.init_distributed(dist_backend="gloo")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    engine, _, _, _ = deepspeed.initialize(args=args, model=model, optimizer=opt)
    rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8, generator=g)
    y = 0.5 * (x[:, :4].sum(dim=1, keepdim=True) - x[:, 4:].sum(dim=1, keepdim=True))
    xs, ys = x[rank::world], y[rank::world]
    losses = []
    for epoch in range(6):
        total = 0.0
        for i in range(0, len(xs), 4):
            loss = torch.nn.functional.mse_loss(engine(xs[i:i + 4]), ys[i:i + 4])
            engine.backward(loss)
            engine.step()
            total += loss.item()
        t = torch.tensor([total / (len(xs) // 4)])
        torch.distributed.all_reduce(t)
        losses.append(t.item() / world)
    stage = engine.zero_optimization_stage()
    if stage == 3:
        with deepspeed.zero.GatheredParameters(list(engine.module.parameters())):
            state = {k: v.detach().clone() for k, v in engine.module.state_dict().items()}
    else:
        state = {k: v.detach().clone() for k, v in engine.module.state_dict().items()}
    if rank == 0:
        print(f"train_deepspeed ZeRO-{stage} (world {world}): losses", " ".join(f"{v:.6f}" for v in losses), flush=True)
        assert losses[-1] < losses[0] * 0.9, losses
        torch.save(state, os.path.join(os.environ["TRAIN_OUT"], "weights.pt"))
    torch.distributed.barrier()


if __name__ == "__main__":
    main()
