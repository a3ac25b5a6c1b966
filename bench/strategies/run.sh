#!/usr/bin/env bash
# Strategies x world sizes with the launcher itself: `mtrain launch --nproc-per-node N
# --strategy S` on a model whose model states dominate (gpt, ~25M parameters by default):
# WARMUP untimed steps then STEPS timed ones per run (no validation split; summary.json counts
# training steps only anyway). The cells run in ROUNDS rounds, interleaved (round 1 of every
# cell, then round 2 of every cell, ...), so a slow phase of the machine hits every cell alike.
# Step time is reported as min / median / max over the rounds (min of the rounds' fastest step,
# median of the rounds' medians, max of their slowest). Reads every
# run's summary.json and prints step time, CPU seconds per step (user+sys of the whole launch,
# every rank, start-up included, divided by the steps run), samples/s, peak memory per rank, model-state
# bytes per rank (params+grads+optimizer, the fullest rank), the strategy's transient peaks
# (summary "memory": gathered parameter units; gathered units + unsharded gradients at the same
# moment — the transient high-water mark), comm bytes per step, and the command line of each run.
#
# usage: bench/strategies/run.sh [BUILD_DIR]
#   env: STRATEGIES ("ddp zero1 zero2 zero3 fsdp")  WORLDS ("1 2 4")  STEPS (10, timed)
#        WARMUP (2)  ROUNDS (3)  BATCH (1)
#        N_EMBD (640)  N_LAYER (8)  VOCAB (8192)  BLOCK (32)  THREADS (1)  PRECISION (fp32)
#        DEVICE (cpu)  ZERO_BUCKET (auto)  EXTRA (more --set key=value arguments)
# ZERO_BUCKET is zero.reduce_bucket_size for the zero1/2/3 cells. 'auto' (n_embd² elements) is
# what the Hugging Face DeepSpeed integration sets; DeepSpeed's own default (5e8 elements) makes
# every model under 500M parameters a single reduce bucket, so ZeRO-2 would hold a whole fp32
# gradient unreduced (its bound is two buckets: the one being reduced, the one being filled).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
mtrain=$build/bin/mtrain
py=/usr/bin/python3
STRATEGIES=${STRATEGIES:-"ddp zero1 zero2 zero3 fsdp"}
WORLDS=${WORLDS:-"1 2 4"}
STEPS=${STEPS:-10} WARMUP=${WARMUP:-2} ROUNDS=${ROUNDS:-3} BATCH=${BATCH:-1} THREADS=${THREADS:-1}
total_steps=$((WARMUP + STEPS))
N_EMBD=${N_EMBD:-640} N_LAYER=${N_LAYER:-8} VOCAB=${VOCAB:-8192} BLOCK=${BLOCK:-32}
PRECISION=${PRECISION:-fp32} DEVICE=${DEVICE:-cpu} EXTRA=${EXTRA:-} ZERO_BUCKET=${ZERO_BUCKET:-auto}
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
for round in $(seq 1 "$ROUNDS"); do
for s in $STRATEGIES; do
  for n in $WORLDS; do
    wd=$tmp/${s}_${n}_r$round
    cmd=("$mtrain" launch --nproc-per-node "$n" --strategy "$s" --no-prefix --master-port 0
         --set model.name=gpt --set model.n_embd="$N_EMBD" --set model.n_layer="$N_LAYER"
         --set model.n_head=8 --set model.vocab_size="$VOCAB" --set model.block_size="$BLOCK"
         --set data.name=synthetic --set data.val_fraction=0 --set train.batch_size="$BATCH" --set train.max_steps="$total_steps"
         --set train.timing_warmup_steps="$WARMUP"
         --set train.log_interval="$total_steps" --set train.threads="$THREADS" --set train.precision="$PRECISION"
         --set launch.device="$DEVICE" --set train.work_dir="$wd" --set checkpoint.interval=0)
    case $s in zero*) cmd+=(--set zero.reduce_bucket_size="$ZERO_BUCKET") ;; esac
    # shellcheck disable=SC2206
    extra=($EXTRA)
    for e in "${extra[@]}"; do cmd+=(--set "$e"); done
    echo "run.sh: round $round/$ROUNDS: $s at world $n" >&2
    # /usr/bin/time: the launch's CPU time, its ranks included (they are its children).
    if ! OMP_NUM_THREADS=$THREADS timeout 1800 /usr/bin/time -f "%U %S" -o "$wd.time" "${cmd[@]}" >"$wd.log" 2>&1 ||
       [ ! -f "$wd/summary.json" ]; then
      echo "run.sh: $s at world $n (round $round) failed; its output:" >&2
      tail -30 "$wd.log" >&2
      continue
    fi
    # Only summary.json is read: the final checkpoint and model.pt (GBs for the large model)
    # go now, not when the whole sweep ends.
    rm -rf "$wd/checkpoints" "$wd/model.pt"
    rows+=("$wd/summary.json|$wd.time|$(printf '%q ' "${cmd[@]}")")
  done
done
done

$py - "$ROUNDS" "$STEPS" "$WARMUP" "${rows[@]}" <<'PY'
import json, statistics, sys
rounds, steps, warmup = sys.argv[1:4]
cells = {}  # (strategy, N) -> summaries of its rounds
cmds = {}
for arg in sys.argv[4:]:
    path, tpath, cmd = arg.split("|", 2)
    s = json.load(open(path))
    # CPU seconds (user, sys) of the whole launch, all ranks, per step run (warm-up included;
    # start-up and model init are in it too, so it is an upper bound of a step's CPU time).
    u, k = (float(x) for x in open(tpath).read().split()[-2:])
    s["_cpu"] = (u / (int(steps) + int(warmup)), k / (int(steps) + int(warmup)))
    key = (s["strategy"], s["world_size"])
    cells.setdefault(key, []).append(s)
    cmds[key] = cmd
print(f"# {rounds} interleaved rounds x ({warmup} warm-up + {steps} timed steps) per cell; "
      "step s = min / median / max over the rounds")
print(f"{'strategy':<9}{'N':>3}{'step s min/med/max':>22}{'cpu s/step usr+sys':>20}{'samples/s':>11}{'peak MB/rank':>14}{'states MB/rank':>16}"
      f"{'gathered MB':>13}{'transient MB':>14}{'comm MB/step':>14}{'psi':>12}")
base = {}
out = []
for key, runs in cells.items():
    st = [r.get("step_time_s", {"min": r["step_time_median_s"], "median": r["step_time_median_s"],
                                "max": r["step_time_median_s"]}) for r in runs]
    lo = min(x["min"] for x in st)
    med = statistics.median(x["median"] for x in st)
    hi = max(x["max"] for x in st)
    s = runs[-1]
    ms = s["model_state_bytes_per_rank"]
    states = ms["params"] + ms["grads"] + ms["optimizer"]
    mem = s.get("memory", {})
    peak = max(r["peak_memory_bytes"] for r in runs) / 2**20
    row = dict(strategy=key[0], n=key[1], lo=lo, med=med, hi=hi,
               sps=statistics.median(r["throughput"]["samples_per_s"] for r in runs), peak=peak,
               states=states / 2**20, comm=s["wire_bytes_per_step"] / 2**20, psi=s["num_params"],
               gathered=mem.get("gathered_peak_bytes", 0) / 2**20,
               transient=mem.get("transient_peak_bytes", 0) / 2**20, rounds=len(runs),
               usr=statistics.median(r["_cpu"][0] for r in runs), sys=statistics.median(r["_cpu"][1] for r in runs))
    out.append(row)
    if row["strategy"] == "ddp":
        base[row["n"]] = row
    t = f"{lo:.3f}/{med:.3f}/{hi:.3f}"
    c = f"{row['usr']:.2f}+{row['sys']:.2f}"
    print(f"{row['strategy']:<9}{row['n']:>3}{t:>22}{c:>20}{row['sps']:>11.2f}{peak:>14.1f}{row['states']:>16.1f}"
          f"{row['gathered']:>13.1f}{row['transient']:>14.1f}{row['comm']:>14.1f}{row['psi']:>12}"
          + ("" if len(runs) == int(rounds) else f"  ({len(runs)} of {rounds} rounds ran)"))
print()
for row in out:
    b = base.get(row["n"])
    if b and row["strategy"] != "ddp":
        print(f"{row['strategy']} vs ddp at world {row['n']}: step time {row['med'] / b['med']:.2f}x (median), "
              f"peak memory {row['peak'] / b['peak']:.2f}x, model states {row['states'] / b['states']:.2f}x")
print()
for key, cmd in cmds.items():
    print(f"# {key[0]} N={key[1]}: {cmd}")
PY
