#!/usr/bin/env bash
# Their config files as they are: a raw DeepSpeed ds_config.json or accelerate config.yaml given to
# --config, `config validate` and `config show` is imported on the fly (its warnings printed);
# train_batch_size is the global batch; fp16 "auto" leaves nothing that warns on later commands;
# `config export` writes files that import back.
. "$(dirname "$0")/../lib.sh"
SRC=${MTRAIN_SOURCE_DIR:?}
DS=$SRC/tests/data/config/seeds/ds_zero3_hf.json
ACC=$SRC/tests/data/config/seeds/accelerate_deepspeed.yaml
cd "$WORK"
export XDG_CONFIG_HOME=$WORK/no-user-config

run_mtrain "$WORK/v1" config validate "$DS"
expect_rc 0 "config validate ds_config.json (raw)"
expect_in "$WORK/v1" "is a DeepSpeed config; imported on the fly"
expect_in "$WORK/v1" "mtrain config import"
expect_not_in "$WORK/v1" "unknown setting"
expect_not_in "$WORK/v1" "did you mean"
run_mtrain "$WORK/v2" config validate "$ACC"
expect_rc 0 "config validate accelerate config.yaml (raw)"
expect_in "$WORK/v2" "is an accelerate config; imported on the fly"

# train_batch_size is DeepSpeed's global batch.
printf '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}\n' >ds.json
run_mtrain "$WORK/s1" config show --config ds.json --sources
expect_rc 0 "config show --config ds.json"
expect_in "$WORK/s1" "global_batch_size: 32"
expect_in "$WORK/s1" "batch_size: 4"
printf '{"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4}\n' >bad.json
run_mtrain "$WORK/s2" config validate bad.json
expect_rc 2 "train_batch_size 30 is not a multiple of micro batch 4"
expect_in "$WORK/s2" "train.global_batch_size 30 is not a multiple"

# fp16 "auto": fp32, and no loss-scaling leftovers that warn on every later command.
run_mtrain "$WORK/s3" config show --config "$DS"
expect_rc 0 "config show --config ds_zero3_hf.json"
expect_in "$WORK/s3" "strategy: zero3"
expect_in "$WORK/s3" "min_loss_scale) is not imported: it applies to fp16 only"
expect_not_in "$WORK/s3" "only applies to fp16"
run_mtrain "$WORK/i1" config import "$DS" -o imported.yaml
run_mtrain "$WORK/s4" config show --config imported.yaml
expect_not_in "$WORK/s4" "warning"

# launch --config with either raw file.
run_mtrain "$WORK/l1" launch --dry-run --config "$DS" --nproc-per-node 2 -- /bin/true
expect_rc 0 "launch --dry-run --config ds_config.json"
expect_in "$WORK/l1" "imported on the fly"
run_mtrain "$WORK/l2" launch --dry-run --config "$ACC" -- /bin/true
expect_rc 0 "launch --dry-run --config accelerate config.yaml"
expect_in "$WORK/l2" "8 ranks on 1 node"

# config export, and back.
printf 'strategy: zero3\ntrain:\n  precision: bf16\n  grad_accum: 2\noptim:\n  grad_clip: 1.0\nzero:\n  offload_optimizer_device: cpu\n' >job.yaml
run_mtrain "$WORK/e1" config export job.yaml --to deepspeed -o out_ds.json
expect_rc 0 "config export --to deepspeed"
"$PY" -c 'import json,sys; d=json.load(open("out_ds.json")); assert d["zero_optimization"]["stage"]==3 and d["bf16"]["enabled"] is True and d["gradient_accumulation_steps"]==2 and d["zero_optimization"]["offload_optimizer"]["device"]=="cpu", d' \
  && ok "exported ds_config.json has stage 3, bf16, accumulation 2, offload cpu" || fail "exported ds_config.json"
run_mtrain "$WORK/e2" config export job.yaml --to accelerate -o out_acc.yaml
expect_rc 0 "config export --to accelerate"
expect_in out_acc.yaml "distributed_type: DEEPSPEED"
for f in out_ds.json out_acc.yaml; do
  run_mtrain "$WORK/b" config show --config "$f"
  expect_rc 0 "config show of the exported $f"
  expect_in "$WORK/b" "strategy: zero3"
  expect_in "$WORK/b" "precision: bf16"
  expect_in "$WORK/b" "grad_accum: 2"
  expect_in "$WORK/b" "offload_optimizer_device: cpu"
done
finish
