#!/usr/bin/env bash
# mtrain against PyTorch 2.x itself, side by side in one run (issue 28, item 5): the same gpt
# (bench/torchscript/gpt.py, scripted for mtrain, the Python class with the same initial weights
# for PyTorch), the same token rows, per-rank batch, AdamW (constant lr) and threads per rank.
#   mtrain ddp          vs PyTorch DDP (Gloo)
#   mtrain fsdp, zero3  vs PyTorch FSDP2 (fully_shard per Block, then the root)
#   mtrain zero1/2/3    vs DeepSpeed ZeRO-1/2/3 (CPU accelerator, Gloo), where DeepSpeed imports
# at each world size of WORLDS, ROUNDS interleaved rounds (the order of the sides alternates, so
# background load falls on both alike). Per run: the largest per-rank median step time after the
# warm-up steps, and the largest per-rank peak RSS (the whole process, both sides). Prints the
# medians over rounds and the ratios PyTorch/mtrain (time: > 1 means mtrain is faster) and
# mtrain/PyTorch (memory: <= 1 means mtrain needs no more), then the command that reproduces it.
#
# usage: bench/peers/run.sh [BUILD_DIR]     (a 2.x build: scripts/bootstrap --torch python)
#   env: WORLDS ("2 4") ROUNDS (3) STEPS (20) WARMUP (3) BATCH (8) THREADS (1)
#        L (4) H (4) E (256) T (64) V (4096) PAIRS (all of the above) PY (the peers python)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
WORLDS=${WORLDS:-"2 4"} ROUNDS=${ROUNDS:-3}
PAIRS=${PAIRS:-"ddp:ddp fsdp:fsdp2 zero3:fsdp2 zero1:zero1 zero2:zero2 zero3:zero3"}
source "$here/bench/peers/sides.sh"
"$PY" -c 'import deepspeed' 2>/dev/null || PAIRS=$(echo "$PAIRS" | tr ' ' '\n' | grep -v ':zero' | tr '\n' ' ')
rows=$work/rows.tsv
: >"$rows"
for world in $WORLDS; do
  for round in $(seq "$ROUNDS"); do
    for pair in $PAIRS; do
      m=${pair%%:*} p=${pair#*:}
      if [ $((round % 2)) -eq 1 ]; then a=$(run_mtrain "$m" "$world" "$round" "$p"); b=$(run_pytorch "$p" "$world" "$round")
      else b=$(run_pytorch "$p" "$world" "$round"); a=$(run_mtrain "$m" "$world" "$round" "$p"); fi
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$world" "$m" "$p" "$round" "$a" "$b" | tr ' ' '\t' >>"$rows"
      echo "world $world round $round: mtrain $m ${a% *} s/step, PyTorch $p ${b% *} s/step" >&2
    done
  done
done
"$PY" - "$rows" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    w, m, p, _, mt, mm, pt, pm = line.split("\t")
    runs[(int(w), m, p)].append((float(mt), int(mm), float(pt), int(pm)))
name = {"ddp": "PyTorch DDP", "fsdp2": "FSDP2", "zero1": "DeepSpeed ZeRO-1", "zero2": "DeepSpeed ZeRO-2",
        "zero3": "DeepSpeed ZeRO-3"}
print("| world | mtrain | PyTorch | mtrain ms/step | PyTorch ms/step | speed-up (PyTorch/mtrain) "
      "| mtrain peak MiB/rank | PyTorch peak MiB/rank | memory (mtrain/PyTorch) |")
print("|---|---|---|---|---|---|---|---|---|")
for (w, m, p), r in runs.items():
    mt, mm, pt, pm = (statistics.median(x[i] for x in r) for i in range(4))
    print(f"| {w} | {m} | {name[p]} | {mt * 1e3:.1f} | {pt * 1e3:.1f} | {pt / mt:.2f}x | {mm / 2**20:.0f} "
          f"| {pm / 2**20:.0f} | {mm / pm:.2f} |")
PY
echo "workload: gpt L=$L H=$H E=$E T=$T V=$V (scripted for mtrain, the same Python class for PyTorch), batch $BATCH/rank, AdamW, $THREADS thread(s)/rank, $STEPS steps ($WARMUP warm-up), medians of $ROUNDS interleaved rounds; peak = the largest per-rank peak RSS"
echo "command: PAIRS=\"$PAIRS\" WORLDS=\"$WORLDS\" ROUNDS=$ROUNDS STEPS=$STEPS WARMUP=$WARMUP BATCH=$BATCH THREADS=$THREADS L=$L H=$H E=$E T=$T V=$V bench/peers/run.sh $build"
