# A Lightning script: Trainer(strategy="ddp", accelerator="cpu", devices=2) on a deterministic
# regression. Under its own launcher (`python train_lightning.py`) Lightning starts the second
# process itself; under torchrun or `mtrain launch --nproc_per_node 2` it finds the ranks in the
# environment. Rank 0 prints the epoch losses and saves the weights to $TRAIN_OUT/weights.pt.
import os

import lightning as L
import torch


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
        self.epoch_losses, self._sum = [], []

    def training_step(self, batch, _):
        xb, yb = batch
        loss = torch.nn.functional.mse_loss(self.net(xb), yb)
        self._sum.append(loss.detach())
        return loss

    def on_train_epoch_end(self):
        t = torch.stack(self._sum).mean()
        self.epoch_losses.append(self.all_gather(t).mean().item())
        self._sum = []

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.2)


def main():
    L.seed_everything(0, verbose=False)
    model = Net()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8, generator=g)
    y = 0.5 * (x[:, :4].sum(dim=1, keepdim=True) - x[:, 4:].sum(dim=1, keepdim=True))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8, shuffle=False)
    trainer = L.Trainer(strategy="ddp", accelerator="cpu", devices=2, max_epochs=6, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        deterministic=True)
    trainer.fit(model, loader)
    if trainer.global_rank == 0:
        losses = model.epoch_losses
        print(f"train_lightning (world {trainer.world_size}, {type(trainer.strategy.cluster_environment).__name__}): losses",
              " ".join(f"{v:.6f}" for v in losses), flush=True)
        assert losses[-1] < losses[0] * 0.9, losses
        torch.save(model.net.state_dict(), os.path.join(os.environ["TRAIN_OUT"], "weights.pt"))


if __name__ == "__main__":
    main()
