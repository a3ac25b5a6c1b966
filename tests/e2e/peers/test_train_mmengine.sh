#!/usr/bin/env bash
# MMEngine, the workflow of OpenMMLab's documents: `python -m torch.distributed.launch
# --nproc_per_node=2 train.py --launcher pytorch` (Runner, MMDistributedDataParallel), and
# FlexibleRunner with FSDPStrategy (FSDP1 on the CPU: device_id "cpu", see train_mmengine.py) and
# with DeepSpeedStrategy (ZeRO-2) under torchrun, each beside `mtrain launch` with the same words;
# 2 ranks over Gloo. MMEngine 0.10.7's DeepSpeedStrategy imports deepspeed.runtime.fp16.onebit,
# which DeepSpeed 0.19 removed: with the pinned pair that half is reported as not runnable
# (docs/peers.md) rather than passed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peers_lib.sh"
need_peers torch mmengine
cp "$PEERS_DIR/train_mmengine.py" "$WORK/" && cd "$WORK"
port=$(free_port)
words=(--nproc_per_node=2 --master_port "$port" "$WORK/train_mmengine.py" --launcher pytorch)
side_by_side mmengine-runner 240 python -m torch.distributed.launch "${words[@]}" -- "${words[@]}"
words=(--nproc_per_node 2 --master_port "$port" "$WORK/train_mmengine.py" --launcher pytorch --mode fsdp)
side_by_side mmengine-fsdp 240 torchrun "${words[@]}" -- "${words[@]}"
if "$PPY" -c 'import deepspeed.runtime.fp16.onebit' 2>/dev/null; then
  words=(--nproc_per_node 2 --master_port "$port" "$WORK/train_mmengine.py" --launcher pytorch --mode deepspeed)
  side_by_side mmengine-deepspeed 300 torchrun "${words[@]}" -- "${words[@]}"
else
  echo "note: MMEngine's DeepSpeedStrategy not run: it imports deepspeed.runtime.fp16.onebit, which this DeepSpeed no longer has"
fi
finish
