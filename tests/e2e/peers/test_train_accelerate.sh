#!/usr/bin/env bash
# An accelerate Accelerator script, DDP and its FSDP plugin, 2 CPU ranks: under `accelerate launch
# --multi_gpu --num_processes 2` (on a machine without GPUs accelerate starts the processes only
# with --multi_gpu; without it, one) and under `mtrain launch` with the same words. On CPU
# accelerate 1.15 takes the FSDP plugin only with GPUs: the fsdp run is MULTI_CPU DDP, said below.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peers_lib.sh"
need_peers torch accelerate
cp "$PEERS_DIR/train_accelerate.py" "$WORK/" && cd "$WORK"
port=$(free_port)
for mode in ddp fsdp; do
  words=(--multi_gpu --num_processes 2 --main_process_port "$port" "$WORK/train_accelerate.py" "$mode")
  side_by_side "accelerate-$mode" 240 accelerate launch "${words[@]}" -- "${words[@]}"
  expect_in "$WORK/accelerate-$mode.mtrain.out" "2 processes"
  grep -q "DistributedType.FSDP" "$WORK/accelerate-$mode.tool.out" || echo "note: $mode ran as $(grep -o 'DistributedType\.[A-Z_]*' "$WORK/accelerate-$mode.tool.out" | head -1) under accelerate"
done
finish
