# An MMEngine script in the shape of OpenMMLab's tools/train.py: `--launcher pytorch`, and
# `--local_rank`/`--local-rank` accepted as torch.distributed.launch passes it. Modes: runner
# (Runner, MMDistributedDataParallel), fsdp (FlexibleRunner + FSDPStrategy), deepspeed
# (FlexibleRunner + DeepSpeedStrategy, ZeRO-2). A deterministic regression on CPU over Gloo; rank 0
# prints the epoch losses and saves the weights to $TRAIN_OUT/weights.pt.
#
# CPU: MMEngine 0.10's init_dist('pytorch') calls torch.cuda.set_device(LOCAL_RANK) on every
# machine without MLU/NPU/MUSA, which raises on a host with no NVIDIA driver; and its DDP/FSDP
# wrappers default device_ids/device_id to [LOCAL_RANK], a GPU. The script passes device_ids=None
# to DDP and device_id="cpu" to FSDP (torch 2.15's FSDP1 raises "FSDP needs a non-CPU accelerator
# device" when no device is named and no GPU exists, but runs on a CPU device named explicitly),
# and, only where CUDA is unavailable, makes set_device a no-op.
import argparse
import os

import torch
import torch.nn.functional as F
from mmengine.hooks import Hook
from mmengine.model import BaseModel

if not torch.cuda.is_available():
    torch.cuda.set_device = lambda *_: None


class Net(BaseModel):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))

    def forward(self, inputs, labels=None, mode="tensor"):
        out = self.net(inputs)
        if mode == "loss":
            return dict(loss=F.mse_loss(out, labels))
        return out


class Regression(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(64, 8, generator=g)
        self.y = 0.5 * (self.x[:, :4].sum(dim=1, keepdim=True) - self.x[:, 4:].sum(dim=1, keepdim=True))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return dict(inputs=self.x[i], labels=self.y[i])


class EpochLoss(Hook):
    def __init__(self):
        self.losses, self.sum = [], []

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        self.sum.append(outputs["loss"].item())

    def after_train_epoch(self, runner):
        self.losses.append(sum(self.sum) / len(self.sum))
        self.sum = []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", default="none")
    ap.add_argument("--local_rank", "--local-rank", type=int, default=0)
    ap.add_argument("--mode", default="runner")
    ap.add_argument("--work-dir", default=os.environ.get("TRAIN_OUT", "."))
    args = ap.parse_args()
    if "LOCAL_RANK" not in os.environ:
        os.environ["LOCAL_RANK"] = str(args.local_rank)
    hook = EpochLoss()
    # The model is built before the Runner applies `randomness`: seed its initial weights here, so
    # that two runs (under two launchers) start from the same weights.
    torch.manual_seed(0)
    common = dict(
        model=Net(), work_dir=os.path.join(args.work_dir, "mm_work"),
        train_dataloader=dict(dataset=Regression(), sampler=dict(type="DefaultSampler", shuffle=False),
                              collate_fn=dict(type="default_collate"), batch_size=8, num_workers=0),
        train_cfg=dict(by_epoch=True, max_epochs=6), launcher=args.launcher,
        env_cfg=dict(dist_cfg=dict(backend="gloo")), randomness=dict(seed=0),
        custom_hooks=[hook], default_hooks=dict(checkpoint=None, logger=dict(type="LoggerHook", interval=100)))
    optim = dict(optimizer=dict(type="SGD", lr=0.2))
    if args.mode == "runner":
        from mmengine.runner import Runner
        runner = Runner(optim_wrapper=optim, cfg=dict(model_wrapper_cfg=dict(type="MMDistributedDataParallel",
                                                                              device_ids=None)), **common)
        runner.train()
        state = (runner.model.module if hasattr(runner.model, "module") else runner.model).state_dict()
    else:
        from mmengine.runner._flexible_runner import FlexibleRunner
        # A strategy object takes the environment settings itself (FlexibleRunner's env_cfg is
        # for a strategy given as a dict).
        strategy_env = dict(env_kwargs=dict(dist_cfg=dict(backend="gloo")), work_dir=common["work_dir"])
        if args.mode == "fsdp":
            from mmengine._strategy import FSDPStrategy
            strategy = FSDPStrategy(model_wrapper=dict(type="MMFullyShardedDataParallel", device_id="cpu",
                                                       use_orig_params=True),
                                    state_dict_cfg="full", **strategy_env)  # rank 0 gets whole tensors
        else:
            from mmengine._strategy import DeepSpeedStrategy
            strategy = DeepSpeedStrategy(config=dict(zero_optimization=dict(stage=2), gradient_clipping=0.0, zero_allow_untested_optimizer=True,
                                                     train_micro_batch_size_per_gpu=8), **strategy_env)
            optim = dict(type="DeepSpeedOptimWrapper", optimizer=dict(type="SGD", lr=0.2))
        runner = FlexibleRunner(strategy=strategy, optim_wrapper=optim, **common)
        runner.train()
        state = runner.strategy.model_state_dict()
    rank = int(os.environ.get("RANK", "0"))
    if rank == 0:
        print(f"train_mmengine {args.mode}: losses", " ".join(f"{v:.6f}" for v in hook.losses), flush=True)
        assert hook.losses[-1] < hook.losses[0] * 0.9, hook.losses
        state = {k.removeprefix("net."): v.detach().cpu().clone() for k, v in state.items()}
        torch.save(state, os.path.join(os.environ["TRAIN_OUT"], "weights.pt"))


if __name__ == "__main__":
    main()
