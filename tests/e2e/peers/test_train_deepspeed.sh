#!/usr/bin/env bash
# A DeepSpeed script (deepspeed.initialize, ZeRO-2 and ZeRO-3 from a ds_config) on CPU: DeepSpeed's
# CPU accelerator (chosen by itself where no GPU is found) over Gloo, 2 ranks, under the
# `deepspeed` launcher and under `mtrain launch` with the same words. DeepSpeed's CPU communicator
# JIT-compiles its shared-memory op on first use (cached in ~/.cache/torch_extensions).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peers_lib.sh"
need_peers torch deepspeed
cp "$PEERS_DIR/train_deepspeed.py" "$WORK/" && cd "$WORK"
port=$(free_port)
for stage in 2 3; do
  printf '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1, "gradient_clipping": 0.0,\n "zero_allow_untested_optimizer": true,\n "zero_optimization": {"stage": %d}}\n' "$stage" >"ds_zero$stage.json"
  words=(--num_gpus 2 --master_port "$port" "$WORK/train_deepspeed.py" --deepspeed_config "$WORK/ds_zero$stage.json")
  side_by_side "deepspeed-zero$stage" 420 deepspeed "${words[@]}" -- "${words[@]}"
  expect_in "$WORK/deepspeed-zero$stage.mtrain.out" "ZeRO-$stage (world 2)"
done
finish
