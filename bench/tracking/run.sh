#!/usr/bin/env bash
# Tracking overhead (issue 42, must be < 1%): the demo job (`scripts/demo`: 2 ranks, ddp, the
# default gpt, 200 steps, a log line every 10) run ROUNDS times with tracking off and on,
# interleaved (off, on, off, on, …) so that drift of the machine falls on both; each run's median
# step time from its summary.json, then the median over the rounds of each side.
#
# "on" is log.tensorboard, plus log.mlflow.uri when MLFLOW_URI is set (a server you started, e.g.
# `mlflow server --host 127.0.0.1 --port 5000`).
#
# usage: bench/tracking/run.sh [BUILD_DIR]      env: ROUNDS (5)  MLFLOW_URI (unset)  EXTRA (more --set …)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
mtrain=$build/bin/mtrain
rounds=${ROUNDS:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/mtrain-bench-tracking.XXXXXX")
trap 'rm -rf "$work"' EXIT
on=(--set log.tensorboard="$work/tb")
[ -n "${MLFLOW_URI:-}" ] && on+=(--set log.mlflow.uri="$MLFLOW_URI" --set log.mlflow.experiment=bench)
median_step() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_median_s"])' "$1/summary.json"; }
off_t=() on_t=()
for r in $(seq "$rounds"); do
  for side in off on; do
    args=()
    [ "$side" = on ] && args=("${on[@]}")
    # shellcheck disable=SC2086
    "$mtrain" launch --nproc-per-node 2 --strategy ddp --master-port auto --work-dir "$work/$side$r" \
      "${args[@]}" ${EXTRA:-} >"$work/$side$r.log" 2>&1 || { cat "$work/$side$r.log"; exit 1; }
    t=$(median_step "$work/$side$r")
    if [ "$side" = off ]; then off_t+=("$t"); else on_t+=("$t"); fi
    echo "round $r $side: median step $(printf '%.5f' "$t") s"
  done
done
python3 - "${off_t[*]}" "${on_t[*]}" <<'PYEOF'
import statistics, sys
off = [float(x) for x in sys.argv[1].split()]
on = [float(x) for x in sys.argv[2].split()]
mo, mn = statistics.median(off), statistics.median(on)
print(f"median step time: off {mo*1e3:.3f} ms, on {mn*1e3:.3f} ms, overhead {100*(mn-mo)/mo:+.2f}% "
      f"({len(off)} interleaved rounds each)")
PYEOF
