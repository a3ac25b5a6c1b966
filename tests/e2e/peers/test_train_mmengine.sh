#!/usr/bin/env bash
# MMEngine, the workflow of OpenMMLab's documents: `python -m torch.distributed.launch
# --nproc_per_node=2 train.py --launcher pytorch` (Runner, MMDistributedDataParallel), and
# FlexibleRunner with FSDPStrategy under torchrun, each beside `mtrain launch` with the same words;
# 2 CPU ranks over Gloo.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peers_lib.sh"
need_peers torch mmengine
cp "$PEERS_DIR/train_mmengine.py" "$WORK/" && cd "$WORK"
port=$(free_port)
words=(--nproc_per_node=2 --master_port "$port" "$WORK/train_mmengine.py" --launcher pytorch)
side_by_side mmengine-runner 240 python -m torch.distributed.launch "${words[@]}" -- "${words[@]}"
words=(--nproc_per_node 2 --master_port "$port" "$WORK/train_mmengine.py" --launcher pytorch --mode fsdp)
side_by_side mmengine-fsdp 240 torchrun "${words[@]}" -- "${words[@]}"
finish
