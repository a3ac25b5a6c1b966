#!/usr/bin/env bash
# mtrain DDP vs PyTorch DDP, 2 ranks on this machine, same model (mlp), data shape, per-rank
# batch, optimiser (AdamW, constant lr) and intra-op threads. Each side is started by hand,
# one process per rank, with the torchrun-style environment. Prints each side's median step
# time (first step excluded), per round and overall, and the ratio.
#
# usage: bench/ddp_vs_pytorch/run.sh [BUILD_DIR]
#   env: STEPS (60) BATCH (64) THREADS (1) HIDDEN (1024) DEPTH (4) INPUT_DIM (512) ROUNDS (2)
#        BUCKET_MB (25, both sides' bucket_cap_mb; the first bucket is 1 MB on both)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
worker=$build/bin/mtrain-worker
py=/usr/bin/python3
STEPS=${STEPS:-60} BATCH=${BATCH:-64} THREADS=${THREADS:-1}
HIDDEN=${HIDDEN:-1024} DEPTH=${DEPTH:-4} INPUT_DIM=${INPUT_DIM:-512} ROUNDS=${ROUNDS:-2}
BUCKET_MB=${BUCKET_MB:-25}
[ -x "$worker" ] || { echo "run.sh: $worker not found; build with: ninja -C $build mtrain-worker" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run_mtrain() {  # $1 = round
  local port; port=$(free_port)
  local wd=$tmp/mtrain_$1 pids=()
  for r in 0 1; do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    OMP_NUM_THREADS=$THREADS timeout 600 "$worker" \
      --set model.name=mlp --set model.input_dim=$INPUT_DIM --set model.hidden=$HIDDEN \
      --set model.depth=$DEPTH --set data.num_samples=4096 --set train.batch_size=$BATCH \
      --set train.max_steps=$STEPS --set train.log_interval=$STEPS --set train.val_steps=1 \
      --set optim.name=adamw --set sched.name=constant --set train.threads=$THREADS \
      --set ddp.bucket_cap_mb=$BUCKET_MB \
      --set train.work_dir="$wd" >"$tmp/mtrain_$1_rank$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$tmp"/mtrain_$1_rank*.log >&2; exit 1; }; done
  $py -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_median_s"])' "$wd/summary.json"
}

run_pytorch() {  # $1 = round
  local port; port=$(free_port)
  local pids=()
  for r in 0 1; do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    OMP_NUM_THREADS=$THREADS timeout 600 $py "$here/pytorch_ddp.py" --steps $STEPS --batch $BATCH \
      --input-dim $INPUT_DIM --hidden $HIDDEN --depth $DEPTH --threads $THREADS --bucket-mb $BUCKET_MB \
      --out "$tmp/pytorch_$1.json" >"$tmp/pytorch_$1_rank$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$tmp"/pytorch_$1_rank*.log >&2; exit 1; }; done
  $py -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_median_s"])' "$tmp/pytorch_$1.json"
}

# Both sides call the same libtorch, so they multiply matrices with the same BLAS — whichever
# libblas.so.3 is selected (netlib's reference BLAS makes both ~7x slower and hides the trainer).
blas_py=$($py -c 'import torch; torch.ones(8,8) @ torch.ones(8,8); print(next((l.split()[-1] for l in open("/proc/self/maps") if "blas" in l.split("/")[-1]), "?"))')
blas_m=$($py -c 'import json,sys; print(json.loads(sys.stdin.read()).get("blas") or "?")' < <("$worker" build-info))
echo "BLAS: mtrain $blas_m, pytorch $blas_py"

m_all=() p_all=()
for round in $(seq 1 "$ROUNDS"); do  # alternate the sides so background load hits both alike
  m=$(run_mtrain "$round"); p=$(run_pytorch "$round")
  printf 'round %d: mtrain %.4f s/step   pytorch %.4f s/step\n' "$round" "$m" "$p"
  m_all+=("$m") p_all+=("$p")
done
$py - "${m_all[*]}" "${p_all[*]}" <<'PY'
import statistics, sys
m = statistics.median(map(float, sys.argv[1].split()))
p = statistics.median(map(float, sys.argv[2].split()))
print(f"median step time: mtrain DDP {m:.4f} s, PyTorch DDP {p:.4f} s, "
      f"mtrain/pytorch = {m / p:.3f} (mtrain {100 * (p - m) / p:+.1f}% faster)")
PY
echo "workload: mlp ${INPUT_DIM}->${HIDDEN}x$((DEPTH-1))->10, batch $BATCH/rank, 2 ranks (PyTorch: gloo; mtrain: gloo + fp32 collectives in shared memory), $THREADS thread(s)/rank, AdamW, buckets $BUCKET_MB MB, $STEPS steps, $ROUNDS rounds"
echo "command: BUCKET_MB=$BUCKET_MB STEPS=$STEPS BATCH=$BATCH THREADS=$THREADS HIDDEN=$HIDDEN DEPTH=$DEPTH INPUT_DIM=$INPUT_DIM ROUNDS=$ROUNDS bench/ddp_vs_pytorch/run.sh $build"
