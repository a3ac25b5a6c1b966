#!/usr/bin/env bash
# MMEngine, the workflow of OpenMMLab's documents: `python -m torch.distributed.launch
# --nproc_per_node=2 train.py --launcher pytorch` (Runner, MMDistributedDataParallel), and
# FlexibleRunner with FSDPStrategy under torchrun, each beside `mtrain launch` with the same words;
# 2 ranks over Gloo. FSDPStrategy wraps in FSDP1, which in torch 2.15 raises "FSDP needs a non-CPU
# accelerator device" without a GPU: that half runs only where CUDA is (docs/peers.md).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peers_lib.sh"
need_peers torch mmengine
cp "$PEERS_DIR/train_mmengine.py" "$WORK/" && cd "$WORK"
port=$(free_port)
words=(--nproc_per_node=2 --master_port "$port" "$WORK/train_mmengine.py" --launcher pytorch)
side_by_side mmengine-runner 240 python -m torch.distributed.launch "${words[@]}" -- "${words[@]}"
if "$PPY" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
  words=(--nproc_per_node 2 --master_port "$port" "$WORK/train_mmengine.py" --launcher pytorch --mode fsdp)
  side_by_side mmengine-fsdp 240 torchrun "${words[@]}" -- "${words[@]}"
else
  echo "note: no CUDA device: FlexibleRunner + FSDPStrategy not run (torch 2.15's FSDP1 needs an accelerator)"
fi
finish
