#!/usr/bin/env python3
"""Export your own PyTorch model for mtrain's bundled trainer (TorchScript).

    python3 export_model.py net.pt
    mtrain launch --nproc-per-node 2 --strategy fsdp --model torchscript --model-path net.pt

The module must be scriptable (torch.jit.script, not trace): its forward takes one Tensor and
returns one Tensor. A `loss(input, target)` method, exported, is used as the loss; without one
set model.loss (cross_entropy, mse or lm_cross_entropy).
"""
import sys

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, inputs: int = 32, hidden: int = 64, classes: int = 10):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    @torch.jit.export
    def loss(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.forward(x), target)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "net.pt"
    torch.jit.save(torch.jit.script(Net()), out)
    print(f"wrote {out}")
