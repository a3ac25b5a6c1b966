#!/usr/bin/env bash
# A Lightning Trainer(strategy="ddp", accelerator="cpu", devices=2): under its own launcher
# (`python train_lightning.py`, Lightning starts the second process) and under torchrun-style
# `mtrain launch --nproc_per_node 2` (Lightning finds the ranks in the environment).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peers_lib.sh"
need_peers torch lightning
cp "$PEERS_DIR/train_lightning.py" "$WORK/" && cd "$WORK"
side_by_side lightning 240 python "$WORK/train_lightning.py" -- --nproc_per_node 2 --master_port "$(free_port)" "$WORK/train_lightning.py"
expect_in "$WORK/lightning.tool.out" "LightningEnvironment"
expect_in "$WORK/lightning.mtrain.out" "world 2, TorchElasticEnvironment"
finish
