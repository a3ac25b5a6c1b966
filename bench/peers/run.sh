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
WORLDS=${WORLDS:-"2 4"} ROUNDS=${ROUNDS:-3} STEPS=${STEPS:-20} WARMUP=${WARMUP:-3} BATCH=${BATCH:-8}
THREADS=${THREADS:-1} L=${L:-4} H=${H:-4} E=${E:-256} T=${T:-64} V=${V:-4096}
PY=${PY:-$("$here/scripts/python-env")}
PAIRS=${PAIRS:-"ddp:ddp fsdp:fsdp2 zero3:fsdp2 zero1:zero1 zero2:zero2 zero3:zero3"}
mtrain=$build/bin/mtrain
[ -x "$mtrain" ] || { echo "bench/peers: $mtrain not found; build with scripts/bootstrap --torch python" >&2; exit 2; }
"$build/bin/mtrain-worker" build-info | grep -q '"libtorch":"2\.' ||
  { echo "bench/peers: $build's worker does not link a PyTorch 2.x (scripts/bootstrap --torch python)" >&2; exit 2; }
"$PY" -c 'import deepspeed' 2>/dev/null || PAIRS=$(echo "$PAIRS" | tr ' ' '\n' | grep -v ':zero' | tr '\n' ' ')
export PATH="$(dirname "$PY"):$PATH" OMP_NUM_THREADS=$THREADS
export TORCH_EXTENSIONS_DIR=$(dirname "$(dirname "$PY")")/torch_extensions  # scripts/python-env built DeepSpeed's op there
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$PY" "$here/bench/torchscript/gpt.py" "$work/gpt.pt" "$L" "$H" "$E" "$T" "$V"
"$PY" - "$work/data.pt" "$V" "$T" <<'PY'
import sys, torch
g = torch.Generator().manual_seed(0)
seq = torch.randint(0, int(sys.argv[2]), (4096, int(sys.argv[3]) + 1), generator=g)
torch.save({"input": seq[:, :-1].contiguous(), "target": seq[:, 1:].contiguous()}, sys.argv[1])
PY

figures() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["step_time_median_s"], d["peak_memory_bytes"])' "$1"; }

run_mtrain() {  # STRATEGY WORLD ROUND PEER -> "seconds bytes"
  local wd="$work/m-$1-$2-$3-$4" extra=()  # one folder per pair: zero3 is run against two peers
  [ "$1" = fsdp ] && extra=(--set fsdp.wrap_module_types=Block)
  "$mtrain" launch --nproc-per-node "$2" --master-port 0 --strategy "$1" --max-steps "$STEPS" --batch-size "$BATCH" \
    --model torchscript --model-path "$work/gpt.pt" --set model.loss=lm_cross_entropy \
    --data tensors --data-path "$work/data.pt" --set data.shuffle=false --set data.val_fraction=0 \
    --set optim.name=adamw --set optim.lr=3e-4 --set optim.beta2=0.95 --set optim.weight_decay=0 \
    --set sched.name=constant --set train.threads="$THREADS" --set train.timing_warmup_steps="$WARMUP" \
    --set train.log_interval=1000 --work-dir "$wd" "${extra[@]}" >"$wd.log" 2>&1 ||
    { echo "bench/peers: mtrain $1 world $2 failed:" >&2; tail -20 "$wd.log" >&2; exit 1; }
  figures "$(find "$wd" -name summary.json | head -1)"
}

run_pytorch() {  # MODE WORLD ROUND -> "seconds bytes"
  local out="$work/p-$1-$2-$3"
  timeout 900 torchrun --nproc_per_node "$2" --master_port "$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')" \
    "$here/bench/peers/pytorch_train.py" "$1" "$work/gpt.pt" "$work/data.pt" "$out.json" \
    "$STEPS" "$WARMUP" "$BATCH" "$THREADS" "$L" "$H" "$E" "$T" "$V" >"$out.log" 2>&1 ||
    { echo "bench/peers: PyTorch $1 world $2 failed:" >&2; grep -v Warning "$out.log" | tail -20 >&2; exit 1; }
  figures "$out.json"
}

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
