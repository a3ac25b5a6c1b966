# An accelerate script: Accelerator(cpu=True) with DDP, or its FSDP plugin (argument "fsdp"), on a
# deterministic regression. The main process prints the losses and saves the full weights to
# $TRAIN_OUT/weights.pt. Run by `accelerate launch --cpu --num_processes 2 …` or the same words
# after `mtrain launch`.
import os
import sys

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "ddp"
    kwargs = {}
    if mode == "fsdp":
        from accelerate.utils import FullyShardedDataParallelPlugin
        kwargs["fsdp_plugin"] = FullyShardedDataParallelPlugin(sharding_strategy="FULL_SHARD", use_orig_params=True,
                                                               cpu_ram_efficient_loading=False, sync_module_states=False,
                                                               state_dict_type="FULL_STATE_DICT")
    accelerator = Accelerator(cpu=True, **kwargs)
    set_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8, generator=g)
    y = 0.5 * (x[:, :4].sum(dim=1, keepdim=True) - x[:, 4:].sum(dim=1, keepdim=True))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8, shuffle=False)
    model = accelerator.prepare(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    opt, loader = accelerator.prepare(opt, loader)
    losses = []
    for epoch in range(6):
        total = torch.zeros(())
        for xb, yb in loader:
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            accelerator.backward(loss)
            opt.step()
            total += loss.detach()
        losses.append(accelerator.reduce(total, reduction="mean").item() / len(loader))
    state = accelerator.get_state_dict(model)
    if accelerator.is_main_process:
        print(f"train_accelerate {mode} ({accelerator.distributed_type}, {accelerator.num_processes} processes): losses",
              " ".join(f"{v:.6f}" for v in losses), flush=True)
        assert losses[-1] < losses[0] * 0.9, losses
        torch.save({k: v.detach().cpu().clone() for k, v in state.items()}, os.path.join(os.environ["TRAIN_OUT"], "weights.pt"))
    accelerator.end_training()


if __name__ == "__main__":
    main()
