#!/usr/bin/env bash
# The compiled model format against everything else that trains the same model (issue 47, item 4),
# side by side in one run: the bench gpt of bench/peers (bench/torchscript/gpt.py with nanoGPT's
# SDPA attention), the same initial weights, token rows, per-rank batch, AdamW (constant lr) and
# threads per rank, trained by
#   mtrain, compiled      the package python -m mtrain_export wrote (model.name compiled)
#   mtrain, TorchScript   the scripted file of the same model (model.name torchscript)
#   PyTorch eager         DDP and FSDP2 (torchrun, bench/peers/pytorch_train.py)
#   torch.compile         DDP and FSDP2 with every Block torch.compile'd first (torchtitan's way)
# under ddp, fsdp and zero3 (mtrain) at each world size of WORLDS, ROUNDS interleaved rounds (the
# order of the sides reverses every round, so background load falls on all alike). First it exports
# the package twice into an empty cache — the first export compiles every program (AOTInductor),
# the second finds them in the cache — and prints both times. Per run: the largest per-rank median
# step time after the warm-up steps (which hold torch.compile's own compiling) and the largest
# per-rank peak RSS. Prints the medians over rounds, each side's time over the compiled package's
# under the same kind of strategy (> 1: the compiled package is faster), and the command.
#
# usage: bench/compiled/run.sh [BUILD_DIR]     (a 2.x build: scripts/bootstrap --torch python)
#   env: WORLDS ("1 2") ROUNDS (3) SIDES (all of the above, KIND:MODE) and bench/peers/sides.sh's
#        STEPS (20) WARMUP (3) BATCH (8) THREADS (1) L (4) H (4) E (256) T (64) V (4096) PY
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
WORLDS=${WORLDS:-"1 2"} ROUNDS=${ROUNDS:-3}
SIDES=${SIDES:-"compiled:ddp torchscript:ddp pytorch:ddp pytorch:ddp+compile compiled:fsdp torchscript:fsdp
  compiled:zero3 torchscript:zero3 pytorch:fsdp2 pytorch:fsdp2+compile"}
ATTENTION=sdpa
source "$here/bench/peers/sides.sh"
# Cold compiles: neither Inductor's nor the exporter's cache of an earlier run answers.
export TORCHINDUCTOR_CACHE_DIR=$work/inductor MTRAIN_EXPORT_CACHE=$work/export-cache
cat >"$work/model.py" <<PY
import sys
sys.path.insert(0, "$here/bench/torchscript")
import torch
import gpt


def make():  # gpt.py's main: the same seed, so the same initial weights as gpt.pt
    torch.manual_seed(0)
    return gpt.GPT($L, $H, $E, $T, $V, True)
PY
export_package() {  # DIR -> the exporter's report line
  PYTHONPATH=$here/python "$PY" -W ignore -m mtrain_export "$work/model.py:make" --example "input=int64:${BATCH}x$T" \
    --example "target=int64:${BATCH}x$T" --wrap-module-types Block -o "$1" 2>"$1.log" | tail -1 ||
    { echo "bench/compiled: the export failed:" >&2; tail -20 "$1.log" >&2; exit 1; }
}
first=$(export_package "$work/pkg")
second=$(export_package "$work/pkg2")
echo "first export:  $first" >&2
echo "second export: $second" >&2
"$PY" - "$work/gpt.pt" "$work/pkg/model.safetensors" <<'PY'
import sys, torch
from safetensors.torch import load_file
ts, pkg = torch.jit.load(sys.argv[1]).state_dict(), load_file(sys.argv[2])
assert ts.keys() == pkg.keys() and all(torch.equal(ts[k], pkg[k]) for k in ts), "the package's weights differ from gpt.pt's"
PY

run_side() {  # KIND:MODE WORLD ROUND -> "seconds bytes"
  case $1 in
    compiled:*) run_mtrain "${1#*:}" "$2" "$3" bench "$work/pkg" ;;
    torchscript:*) run_mtrain "${1#*:}" "$2" "$3" bench ;;
    pytorch:*) run_pytorch "${1#*:}" "$2" "$3" ;;
    *) echo "bench/compiled: unknown side '$1' (compiled:, torchscript:, pytorch:)" >&2; exit 2 ;;
  esac
}
rows=$work/rows.tsv
: >"$rows"
for world in $WORLDS; do
  for round in $(seq "$ROUNDS"); do
    order=$SIDES
    [ $((round % 2)) -eq 0 ] && order=$(echo $SIDES | tr ' ' '\n' | tac | tr '\n' ' ')
    for side in $order; do
      r=$(run_side "$side" "$world" "$round")
      printf '%s\t%s\t%s\n' "$world" "$side" "$r" | tr ' ' '\t' >>"$rows"
      echo "world $world round $round: $side ${r% *} s/step" >&2
    done
  done
done
"$PY" - "$rows" "$SIDES" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    w, side, t, m = line.split("\t")
    runs[(int(w), side)].append((float(t), int(m)))
name = {"compiled": "mtrain, compiled package", "torchscript": "mtrain, TorchScript", "pytorch": "PyTorch"}
peer = {"ddp": "DDP", "fsdp2": "FSDP2", "ddp+compile": "torch.compile DDP", "fsdp2+compile": "torch.compile FSDP2"}
# The compiled package's run each side is measured against: the same kind of strategy.
kind = {"ddp": "ddp", "ddp+compile": "ddp", "fsdp": "fsdp", "fsdp2": "fsdp", "fsdp2+compile": "fsdp", "zero3": "zero3"}
print("| world | trainer | strategy | ms/step | side / compiled (time) | peak MiB/rank |")
print("|---|---|---|---|---|---|")
for w in sorted({w for w, _ in runs}):
    med = {s: (statistics.median(x[0] for x in r), statistics.median(x[1] for x in r))
           for (ww, s), r in runs.items() if ww == w}
    for side in sys.argv[2].split():
        if side not in med:
            continue
        k, mode = side.split(":")
        t, m = med[side]
        ref = med.get(f"compiled:{kind[mode]}")
        ratio = f"{t / ref[0]:.2f}x" if ref else "-"
        print(f"| {w} | {name[k]} | {peer.get(mode, mode) if k == 'pytorch' else mode} | {t * 1e3:.1f} | {ratio} | {m / 2**20:.0f} |")
PY
echo "first export (empty caches): $first"
echo "second export (the same model): $second"
echo "workload: gpt L=$L H=$H E=$E T=$T V=$V, SDPA attention (the package and gpt.pt from the same weights), batch $BATCH/rank, AdamW, $THREADS thread(s)/rank, $STEPS steps ($WARMUP warm-up), medians of $ROUNDS interleaved rounds; peak = the largest per-rank peak RSS"
echo "command: WORLDS=\"$WORLDS\" ROUNDS=$ROUNDS STEPS=$STEPS WARMUP=$WARMUP BATCH=$BATCH THREADS=$THREADS L=$L H=$H E=$E T=$T V=$V bench/compiled/run.sh $build"
