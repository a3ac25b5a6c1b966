#!/usr/bin/env bash
# Configs against their real readers: `mtrain config export --to deepspeed` is accepted by
# DeepSpeed's own DeepSpeedConfig and `--to accelerate` by accelerate's config loader, with the
# values the job said; `mtrain config import` reads what `accelerate config default` and MMEngine's
# Config.dump write.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peers_lib.sh"
need_peers deepspeed accelerate mmengine
cd "$WORK"
export XDG_CONFIG_HOME=$WORK/no-user-config
CHECK=$PEERS_DIR/check_configs.py

# Export → DeepSpeed's DeepSpeedConfig, for each ZeRO stage, precision and schedule.
printf 'strategy: zero3\ntrain:\n  precision: bf16\n  grad_accum: 2\n  batch_size: 4\noptim:\n  grad_clip: 1.0\nzero:\n  offload_optimizer_device: cpu\nsched:\n  name: cosine\n  warmup_steps: 10\n' >z3.yaml
printf 'strategy: zero2\ntrain:\n  precision: fp16\noptim:\n  name: sgd\n  lr: 0.1\nsched:\n  name: constant\n' >z2.yaml
printf 'strategy: zero1\ntrain:\n  precision: fp32\n  global_batch_size: 16\n  batch_size: 8\n' >z1.yaml
for j in z3 z2 z1; do
  run_mtrain "$WORK/e_$j" config export $j.yaml --to deepspeed -o $j.json
  expect_rc 0 "config export $j.yaml --to deepspeed"
done
"$PPY" "$CHECK" deepspeed z3.json zero_optimization_stage=3 bfloat16_config.enabled=True float16_config.enabled=False \
  gradient_accumulation_steps=2 train_micro_batch_size_per_gpu=4 train_batch_size=8 gradient_clipping=1.0 \
  optimizer_name=adamw scheduler_name=WarmupCosineLR zero_config.offload_optimizer.device=cpu \
  && ok "DeepSpeed reads the exported ZeRO-3 config" || fail "DeepSpeed's DeepSpeedConfig on z3.json"
"$PPY" "$CHECK" deepspeed z2.json zero_optimization_stage=2 float16_config.enabled=True optimizer_name=SGD scheduler_name=WarmupLR \
  && ok "DeepSpeed reads the exported ZeRO-2 fp16 config" || fail "DeepSpeed's DeepSpeedConfig on z2.json"
# train_batch_size 16 = micro 8 x accumulation 1 x world 2: DeepSpeed (world 1 here) must refuse
# it, as it refuses a wrong batch; with WORLD 2 in the file's own numbers it holds.
"$PPY" "$CHECK" deepspeed z1.json zero_optimization_stage=1 >z1.out 2>&1 && fail "DeepSpeed took train_batch_size 16 at world 1" \
  || { grep -q "train_batch_size" z1.out && ok "DeepSpeed checks the exported global batch (16 = 8 x 1 x world 2)" || fail "z1.json: $(tail -2 z1.out)"; }

# Export → accelerate's own loader (ClusterConfig: unknown keys and bad values are errors).
printf 'strategy: fsdp\ntrain:\n  precision: bf16\nlaunch:\n  nproc_per_node: "2"\n' >fsdp.yaml
printf 'strategy: ddp\nlaunch:\n  device: cpu\n  nproc_per_node: "2"\n' >ddp.yaml
for j in z3 fsdp ddp; do
  run_mtrain "$WORK/a_$j" config export $j.yaml --to accelerate -o acc_$j.yaml
  expect_rc 0 "config export $j.yaml --to accelerate"
done
"$PPY" "$CHECK" accelerate acc_z3.yaml distributed_type=DEEPSPEED mixed_precision=bf16 deepspeed_config.zero_stage=3 \
  deepspeed_config.gradient_accumulation_steps=2 deepspeed_config.offload_optimizer_device=cpu \
  && ok "accelerate reads the exported DeepSpeed config" || fail "accelerate on acc_z3.yaml"
"$PPY" "$CHECK" accelerate acc_fsdp.yaml distributed_type=FSDP mixed_precision=bf16 num_processes=2 \
  fsdp_config.fsdp_sharding_strategy=FULL_SHARD \
  && ok "accelerate reads the exported FSDP config" || fail "accelerate on acc_fsdp.yaml"
"$PPY" "$CHECK" accelerate acc_ddp.yaml distributed_type=MULTI_CPU use_cpu=True num_processes=2 \
  && ok "accelerate reads the exported CPU DDP config" || fail "accelerate on acc_ddp.yaml"

# Import what accelerate writes: `accelerate config default` (YAML and JSON).
for f in default.yaml default.json; do
  run_peer "$WORK/d_$f" 120 accelerate config default --config_file "$WORK/$f" --mixed_precision bf16
  expect_rc 0 "accelerate config default --config_file $f"
  run_mtrain "$WORK/i_$f" config import "$WORK/$f" -o "imp_$f.yaml"
  expect_rc 0 "mtrain config import $f (accelerate config default)"
  run_mtrain "$WORK/s_$f" config show --config "imp_$f.yaml"
  expect_rc 0 "config show of the imported $f"
  expect_in "$WORK/s_$f" "precision: bf16"
done

# Import what MMEngine's Config.dump writes (a ds_config kept in an MMEngine config), JSON and YAML.
for f in mm_ds.json mm_ds.yaml; do
  "$PPY" "$CHECK" mmengine-dump "$WORK/$f" >/dev/null && ok "MMEngine Config.dump wrote $f" || fail "Config.dump $f"
  run_mtrain "$WORK/m_$f" config import "$WORK/$f" -o "imp_$f.yaml"
  expect_rc 0 "mtrain config import $f (MMEngine Config.dump)"
  run_mtrain "$WORK/ms_$f" config show --config "imp_$f.yaml"
  expect_in "$WORK/ms_$f" "strategy: zero3"
  expect_in "$WORK/ms_$f" "precision: bf16"
  expect_in "$WORK/ms_$f" "grad_accum: 2"
  expect_in "$WORK/ms_$f" "offload_optimizer_device: cpu"
done
finish
