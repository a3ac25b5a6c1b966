#!/usr/bin/env bash
# DeepSpeed launcher habits: --include/--num_gpus over this machine's GPUs (dry runs), the CPU
# form, --no_local_rank, and --deepspeed_config FILE handed to every rank (pass_config
# deepspeed) with the keys and value types DeepSpeed documents; refused flags name mtrain's way.
. "$(dirname "$0")/../lib.sh"
export MTRAIN_PYTHON=$PY
SRC=${MTRAIN_SOURCE_DIR:?}
PEER=$SRC/tests/e2e/launch/ds_config_peer.py
cd "$WORK"

world_of() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["world_size"])' "$1"; }
CUDA_VISIBLE_DEVICES=0,1,2 run_mtrain "$WORK/d1" launch --include localhost:0,2 --dry-run --format json train.py
expect_rc 0 "--include localhost:0,2 dry run"
[ "$(world_of "$WORK/d1")" = 2 ] && ok "two ranks on GPUs 0 and 2" || fail "world of --include: $(cat "$WORK/d1")"
expect_in "$WORK/d1" '"MTRAIN_GPU": "2"'
CUDA_VISIBLE_DEVICES=0,1,2 run_mtrain "$WORK/d2" launch -i localhost:1 --dry-run train.py
expect_rc 0 "-i localhost:1"
CUDA_VISIBLE_DEVICES=0,1,2 run_mtrain "$WORK/d3" launch --num_gpus 2 --dry-run --format json train.py
expect_rc 0 "--num_gpus 2 without a hostfile"
[ "$(world_of "$WORK/d3")" = 2 ] && ok "--num_gpus 2: GPUs 0..1" || fail "world of --num_gpus 2"

# The CPU form (no --num_gpus), with deepspeed's own spellings; --no_local_rank: no --local_rank.
cat >peer.py <<'PYEOF'
import os, sys
print(f"peer rank {os.environ['RANK']} args {sys.argv[1:]}", flush=True)
PYEOF
run_mtrain "$WORK/o1" launch --no_local_rank --master_addr 127.0.0.1 --master_port 0 peer.py --x 1
expect_rc 0 "deepspeed-style --no_local_rank peer.py"
expect_in "$WORK/o1" "peer rank 0 args ['--x', '1']"
run_mtrain "$WORK/o2" launch --local-rank-arg --master_port 0 peer.py
expect_in "$WORK/o2" "args ['--local_rank=0']"

# launch.pass_config deepspeed: each rank gets --deepspeed_config FILE made from the job.
run_mtrain "$WORK/o3" launch --pass-config deepspeed --strategy zero3 --grad-clip 1.0 --batch-size 4 --grad-accum 2 \
  --set zero.offload_optimizer_device=cpu --nproc_per_node 2 --master_port 0 "$PEER"
expect_rc 1 "without EXPECT_* the peer fails (the test can fail)"
export EXPECT_STAGE=3 EXPECT_PRECISION=fp32 EXPECT_CLIP=1.0 EXPECT_OFFLOAD=cpu
run_mtrain "$WORK/o3" launch --pass-config deepspeed --strategy zero3 --grad-clip 1.0 --batch-size 4 --grad-accum 2 \
  --set zero.offload_optimizer_device=cpu --nproc_per_node 2 --master_port 0 "$PEER"
expect_rc 0 "--pass-config deepspeed: every rank reads --deepspeed_config"
expect_in "$WORK/o3" "ds_config ok rank 1: stage 3, train_batch_size 16"
expect_not_in "$WORK/o3" "warning"

# The same from a job file, and a raw ds_config.json as --config (its "auto" values resolved).
printf 'strategy: zero2\ntrain:\n  precision: bf16\noptim:\n  grad_clip: 0.5\nlaunch:\n  pass_config: deepspeed\n' >job.yaml
EXPECT_STAGE=2 EXPECT_PRECISION=bf16 EXPECT_CLIP=0.5 EXPECT_OFFLOAD=none run_mtrain "$WORK/o4" launch --config job.yaml --master_port 0 "$PEER"
expect_rc 0 "launch.pass_config deepspeed from the job file"
expect_in "$WORK/o4" "ds_config ok rank 0: stage 2"
EXPECT_STAGE=3 EXPECT_PRECISION=fp32 EXPECT_CLIP=0.0 EXPECT_OFFLOAD=none run_mtrain "$WORK/o5" launch \
  --config "$SRC/tests/data/config/seeds/ds_zero3_hf.json" --pass-config deepspeed --nproc_per_node 2 --master_port 0 "$PEER"
expect_rc 0 "raw ds_config.json (HF 'auto' values) as --config"
expect_in "$WORK/o5" "is a DeepSpeed config; imported on the fly"
expect_in "$WORK/o5" "ds_config ok rank 1: stage 3, train_batch_size 4"

# Refused deepspeed flags name mtrain's way.
refused "--nnodes MIN:MAX --rdzv-backend c10d" --elastic_training peer.py
refused "--nnodes MIN:MAX" --min_elastic_nodes 1 peer.py
refused "--launcher ssh with the same --hostfile" --launcher openmpi peer.py
refused "--ssh-option" --launcher_args "-x FOO" peer.py
refused "Add --hostfile FILE" --num_nodes 2 peer.py
refused "SIGTERM" --save_pid peer.py
run_mtrain "$WORK/t1" launch --dry-run --num_gpu 2 peer.py
expect_rc 2 "typo --num_gpu under --dry-run"
expect_in "$WORK/t1" "Did you mean --num_gpus?"
finish
