#!/usr/bin/env bash
# `accelerate launch` habits: its flags with accelerate's meaning, the variables it sets for a
# script (pass_config accelerate), its config.yaml as --config_file, MTRAIN_JOB_FILE read by a
# program, and trainer settings that nothing hands over named in a warning.
. "$(dirname "$0")/../lib.sh"
export MTRAIN_PYTHON=$PY
SRC=${MTRAIN_SOURCE_DIR:?}
PEER=$SRC/tests/e2e/launch/accelerate_env_peer.py
JOBPEER=$SRC/tests/e2e/launch/job_file_peer.py
cd "$WORK"

# As typed for accelerate launch: total processes, mixed precision → ACCELERATE_MIXED_PRECISION.
EXPECT_WORLD=2 EXPECT_ACCELERATE=ACCELERATE_MIXED_PRECISION=bf16 EXPECT_ABSENT=ACCELERATE_USE_DEEPSPEED,ACCELERATE_USE_FSDP \
  run_mtrain "$WORK/o1" launch --num_processes 2 --mixed_precision bf16 --main_process_port 0 "$PEER"
expect_rc 0 "--num_processes 2 --mixed_precision bf16 peer.py"
expect_in "$WORK/o1" "accelerate env ok rank 1: ACCELERATE_MIXED_PRECISION=bf16"
EXPECT_WORLD=2 EXPECT_ACCELERATE=ACCELERATE_MIXED_PRECISION=fp16 \
  run_mtrain "$WORK/o1b" launch --num_processes 2 --mixed_precision bf16 --main_process_port 0 "$PEER"
expect_rc 1 "the peer fails on a wrong value (the check can fail)"

EXPECT_WORLD=2 EXPECT_ABSENT=ACCELERATE_USE_FSDP \
EXPECT_ACCELERATE=ACCELERATE_USE_DEEPSPEED=true,ACCELERATE_DEEPSPEED_ZERO_STAGE=3,ACCELERATE_GRADIENT_ACCUMULATION_STEPS=2,ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE=cpu,ACCELERATE_GRADIENT_CLIPPING=1.0,ACCELERATE_MIXED_PRECISION=no \
  run_mtrain "$WORK/o2" launch --num_processes=2 --use_deepspeed --zero_stage 3 --gradient_accumulation_steps 2 \
  --gradient_clipping 1.0 --offload_optimizer_device cpu --mixed_precision no --main_process_port 0 "$PEER"
expect_rc 0 "--use_deepspeed --zero_stage 3 …"
expect_in "$WORK/o2" "ACCELERATE_DEEPSPEED_ZERO_STAGE=3"

EXPECT_WORLD=2 EXPECT_ABSENT=ACCELERATE_USE_DEEPSPEED \
EXPECT_ACCELERATE=ACCELERATE_USE_FSDP=true,FSDP_SHARDING_STRATEGY=FULL_SHARD,FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP,FSDP_OFFLOAD_PARAMS=false,ACCELERATE_USE_CPU=True \
  run_mtrain "$WORK/o3" launch --use_fsdp --cpu --multi_gpu --num_processes 2 --main_process_port 0 "$PEER"
expect_rc 0 "--use_fsdp --cpu --multi_gpu"
expect_in "$WORK/o3" "mtrain: note: --multi_gpu"

# The accelerate config.yaml as --config_file (raw, imported on the fly); flags still win.
EXPECT_WORLD=2 EXPECT_ACCELERATE=ACCELERATE_USE_DEEPSPEED=true,ACCELERATE_DEEPSPEED_ZERO_STAGE=3,ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE=cpu \
  run_mtrain "$WORK/o4" launch --config_file "$SRC/tests/data/config/seeds/accelerate_deepspeed.yaml" \
  --num_processes 2 --main_process_port 0 "$PEER"
expect_rc 0 "--config_file accelerate_deepspeed.yaml"
expect_in "$WORK/o4" "is an accelerate config; imported on the fly"

# MTRAIN_JOB_FILE: the resolved job, read by the program.
printf 'strategy: zero2\ntrain:\n  grad_accum: 3\nmodel:\n  name: mlp\n' >job.yaml
EXPECT_JOB=strategy=zero2,train.grad_accum=3,model.name=mlp run_mtrain "$WORK/o5" launch --config job.yaml \
  --nproc-per-node 2 --master-port 0 "$JOBPEER"
expect_rc 0 "MTRAIN_JOB_FILE read by the program"
expect_in "$WORK/o5" "job file ok rank 1"
# Nothing hands strategy or model to the program but that file: a warning names them.
expect_in "$WORK/o5" "warning: the program gets these trainer settings only in the file MTRAIN_JOB_FILE names"
expect_in "$WORK/o5" "strategy=zero2"

# The issue's case: an imported accelerate config whose ZeRO-3, offload and clipping were
# silently dropped now come with a warning naming them.
run_mtrain "$WORK/imp" config import "$SRC/tests/data/config/seeds/accelerate_deepspeed.yaml" -o a.yaml
expect_rc 0 "config import accelerate_deepspeed.yaml"
run_mtrain "$WORK/o6" launch --config a.yaml --nproc-per-node 1 --master-port 0 -- "$PY" -c 'print("ran")'
expect_rc 0 "launch --config a.yaml -- python3 -c …"
expect_in "$WORK/o6" "strategy=zero3"
expect_in "$WORK/o6" "zero.offload_optimizer_device=cpu"
expect_in "$WORK/o6" "optim.grad_clip=1.0"

# Refused and mistyped.
run_mtrain "$WORK/r1" launch --num_cpu_threads_per_process 4 peer.py
expect_rc 2 "--num_cpu_threads_per_process refused"
expect_in "$WORK/r1" "OMP_NUM_THREADS=N mtrain launch"
run_mtrain "$WORK/r2" launch --mixed_precision fp8 peer.py
expect_rc 2 "--mixed_precision fp8 refused"
run_mtrain "$WORK/r3" launch --num_processes 3 --num_machines 2 peer.py
expect_rc 2 "--num_processes 3 over 2 machines"
run_mtrain "$WORK/t1" launch --dry-run --num_proceses 2 peer.py
expect_rc 2 "typo --num_proceses under --dry-run"
expect_in "$WORK/t1" "Did you mean --num_processes?"
finish
