#!/usr/bin/env bash
# Strategies x world sizes with the launcher itself: `mtrain launch --nproc-per-node N
# --strategy S` on a model whose model states dominate (gpt, ~25M parameters by default), a few
# steps each (no validation split, so every collective counted is a training one). Reads every
# run's summary.json and prints median step time, samples/s, peak memory per rank, model-state
# bytes per rank (params+grads+optimizer, the fullest rank), the strategy's transient peaks
# (summary "memory": gathered parameter units; gathered units + unsharded gradients at the same
# moment), comm bytes per step, and the command line of each run.
#
# usage: bench/strategies/run.sh [BUILD_DIR]
#   env: STRATEGIES ("ddp zero1 zero2 zero3 fsdp")  WORLDS ("1 2 4")  STEPS (6)  BATCH (1)
#        N_EMBD (640)  N_LAYER (8)  VOCAB (8192)  BLOCK (32)  THREADS (1)  PRECISION (fp32)
#        DEVICE (cpu)  EXTRA (more --set key=value arguments)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
mtrain=$build/bin/mtrain
py=/usr/bin/python3
STRATEGIES=${STRATEGIES:-"ddp zero1 zero2 zero3 fsdp"}
WORLDS=${WORLDS:-"1 2 4"}
STEPS=${STEPS:-6} BATCH=${BATCH:-1} THREADS=${THREADS:-1}
N_EMBD=${N_EMBD:-640} N_LAYER=${N_LAYER:-8} VOCAB=${VOCAB:-8192} BLOCK=${BLOCK:-32}
PRECISION=${PRECISION:-fp32} DEVICE=${DEVICE:-cpu} EXTRA=${EXTRA:-}
for b in mtrain mtrain-worker; do
  [ -x "$build/bin/$b" ] || { echo "run.sh: $build/bin/$b not found; build with: ninja -C $build mtrain mtrain-worker" >&2; exit 2; }
done
# Peak memory on the CPU is the worker's peak RSS. glibc raises its mmap threshold each time a
# large block is freed, after which freed tensors stay in the heap and count as resident; a
# fixed threshold returns them to the system, so the peak reflects live memory for every
# strategy alike (override by exporting MALLOC_MMAP_THRESHOLD_ yourself).
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-131072}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rows=()
for s in $STRATEGIES; do
  for n in $WORLDS; do
    wd=$tmp/${s}_$n
    cmd=("$mtrain" launch --nproc-per-node "$n" --strategy "$s" --no-prefix --master-port 0
         --set model.name=gpt --set model.n_embd="$N_EMBD" --set model.n_layer="$N_LAYER"
         --set model.n_head=8 --set model.vocab_size="$VOCAB" --set model.block_size="$BLOCK"
         --set data.name=synthetic --set data.val_fraction=0 --set train.batch_size="$BATCH" --set train.max_steps="$STEPS"
         --set train.log_interval="$STEPS" --set train.threads="$THREADS" --set train.precision="$PRECISION"
         --set launch.device="$DEVICE" --set train.work_dir="$wd" --set checkpoint.interval=0)
    # shellcheck disable=SC2206
    extra=($EXTRA)
    for e in "${extra[@]}"; do cmd+=(--set "$e"); done
    if ! OMP_NUM_THREADS=$THREADS timeout 1800 "${cmd[@]}" >"$tmp/${s}_$n.log" 2>&1 || [ ! -f "$wd/summary.json" ]; then
      echo "run.sh: $s at world $n failed; its output:" >&2
      tail -30 "$tmp/${s}_$n.log" >&2
      continue
    fi
    # Only summary.json is read: the final checkpoint and model.pt (GBs for the large model)
    # go now, not when the whole sweep ends.
    rm -rf "$wd/checkpoints" "$wd/model.pt"
    rows+=("$wd/summary.json|$(printf '%q ' "${cmd[@]}")")
  done
done

$py - "${rows[@]}" <<'PY'
import json, sys
print(f"{'strategy':<9}{'N':>3}{'step s':>9}{'samples/s':>11}{'peak MB/rank':>14}{'states MB/rank':>16}"
      f"{'gathered MB':>13}{'transient MB':>14}{'comm MB/step':>14}{'psi':>12}")
base = {}
out = []
for arg in sys.argv[1:]:
    path, cmd = arg.split("|", 1)
    s = json.load(open(path))
    st = s["model_state_bytes_per_rank"]
    states = st["params"] + st["grads"] + st["optimizer"]
    mem = s.get("memory", {})
    row = (s["strategy"], s["world_size"], s["step_time_median_s"], s["throughput"]["samples_per_s"],
           s["peak_memory_bytes"] / 2**20, states / 2**20, s["wire_bytes_per_step"] / 2**20, s["num_params"],
           mem.get("gathered_peak_bytes", 0) / 2**20, mem.get("transient_peak_bytes", 0) / 2**20)
    out.append((row, cmd))
    if row[0] == "ddp":
        base[row[1]] = row
    print(f"{row[0]:<9}{row[1]:>3}{row[2]:>9.3f}{row[3]:>11.2f}{row[4]:>14.1f}{row[5]:>16.1f}"
          f"{row[8]:>13.1f}{row[9]:>14.1f}{row[6]:>14.1f}{row[7]:>12}")
print()
for row, _ in out:
    b = base.get(row[1])
    if b and row[0] != "ddp":
        print(f"{row[0]} vs ddp at world {row[1]}: peak memory {row[4] / b[4]:.2f}x, "
              f"model states {row[5] / b[5]:.2f}x, step time {row[2] / b[2]:.2f}x")
print()
for row, cmd in out:
    print(f"# {row[0]} N={row[1]}: {cmd}")
PY
