#!/usr/bin/env bash
# Tracking overhead (issue 42, must be < 1%): the demo job (`scripts/demo`: 2 ranks, ddp, the
# default gpt, 200 steps, a log line every 10) run ROUNDS times on each side — off,
# log.tensorboard, log.mlflow.uri to an `mlflow server` this script starts on 127.0.0.1 (SQLite
# store in a temporary folder) — interleaved, the order rotated each round, so that drift of a
# shared machine falls on every side alike.
#
# Two figures per run: the median step time the trainer reports (summary.json; it times the
# optimizer step, not the logging after it), and the loop's wall time per step — from the run
# folder's run.json (written before the tracker starts) to its summary.json (written after the
# last step, before the tracker's end) over the steps — which also holds what rank 0 spends
# logging on logging steps and what the MLflow thread (and, on one machine, the server) takes
# from the ranks' CPUs. Overhead: each round's ratio to that round's off run, median over rounds,
# with the range.
#
# The magnifier (NPROC=1, a tiny model whose step takes milliseconds, logging every step): the
# same tracking cost per logging step, spread over a few milliseconds instead of the demo's
# 10 x ~150 ms, so what a shared machine's noise hides in the demo job shows here, ~1000x larger.
#
# usage: bench/tracking/run.sh [BUILD_DIR]    env: ROUNDS (5)  EXTRA (more flags, e.g. --max-steps 20)
#        NPROC (2)  MLFLOW_PY (python with mlflow: .venv/bin/python of this tree)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
mtrain=$build/bin/mtrain
rounds=${ROUNDS:-5}
nproc=${NPROC:-2}
mlflow_py=${MLFLOW_PY:-$root/.venv/bin/python}
work=$(mktemp -d "${TMPDIR:-/tmp}/mtrain-bench-tracking.XXXXXX")
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
export MLFLOW_DISABLE_TELEMETRY=true DO_NOT_TRACK=true

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
uri=http://127.0.0.1:$port
"$mlflow_py" -m mlflow server --host 127.0.0.1 --port "$port" --workers 1 \
  --backend-store-uri "sqlite:///$work/mlflow.db" --artifacts-destination "$work/artifacts" >"$work/server.log" 2>&1 &
server=$!
up=0
for _ in $(seq 240); do
  python3 -c "import urllib.request; urllib.request.urlopen('$uri/health', timeout=1)" 2>/dev/null && { up=1; break; }
  sleep 0.5
done
[ "$up" = 1 ] || { tail -20 "$work/server.log"; echo "mlflow server did not start" >&2; exit 1; }

sides=(off tensorboard mlflow)
args_of() {
  case $1 in
    off) ;;
    tensorboard) echo "--set log.tensorboard=$work/tb" ;;
    mlflow) echo "--set log.mlflow.uri=$uri --set log.mlflow.experiment=bench" ;;
  esac
}
: >"$work/results"
for r in $(seq "$rounds"); do
  for i in 0 1 2; do
    side=${sides[$(((i + r) % 3))]}
    wd=$work/$side$r
    # shellcheck disable=SC2046,SC2086
    "$mtrain" launch --nproc-per-node "$nproc" --strategy ddp --master-port auto --work-dir "$wd" \
      $(args_of "$side") ${EXTRA:-} >"$wd.log" 2>&1 || { cat "$wd.log"; exit 1; }
    run=$(find "$wd" -mindepth 1 -maxdepth 1 -name '2*' -type d | head -1)
    python3 - "$run" "$side" "$r" >>"$work/results" <<'PYEOF'
import json, os, sys
run, side, r = sys.argv[1:4]
s = json.load(open(os.path.join(run, "summary.json")))
steps = s["steps"]  # a fresh run: its steps are this run's
wall = (os.stat(os.path.join(run, "summary.json")).st_mtime_ns - os.stat(os.path.join(run, "run.json")).st_mtime_ns) / 1e9
print(r, side, s["step_time_median_s"], wall / steps)
PYEOF
    tail -1 "$work/results" | awk '{printf "round %s %-11s median step %.2f ms, loop %.2f ms/step\n", $1, $2, $3*1e3, $4*1e3}'
  done
done
python3 - "$work/results" "$rounds" "$*" "${EXTRA:-}" "$nproc" <<'PYEOF'
import collections, os, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med, loop = collections.defaultdict(dict), collections.defaultdict(dict)
for r, side, m, w in rows:
    med[side][r], loop[side][r] = float(m), float(w)
load = os.getloadavg()
extra = (f" NPROC={sys.argv[5]}" if sys.argv[5] != "2" else "") + (f" EXTRA='{sys.argv[4]}'" if sys.argv[4] else "")
print(f"\n`ROUNDS={sys.argv[2]}{extra} bench/tracking/run.sh {sys.argv[3]}`".rstrip() + f" — load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min), {os.cpu_count()} CPUs\n")
print("| tracking | median step (ms) | loop wall per step (ms) | overhead, step | overhead, loop wall (range over rounds) |")
print("|---|---|---|---|---|")
for side in ("off", "tensorboard", "mlflow"):
    ms = statistics.median(med[side].values()) * 1e3
    ws = statistics.median(loop[side].values()) * 1e3
    if side == "off":
        print(f"| off | {ms:.2f} | {ws:.2f} | — | — |")
        continue
    rs = sorted(loop[side][r] / loop["off"][r] - 1 for r in loop[side])
    rm = [med[side][r] / med["off"][r] - 1 for r in med[side]]
    print(f"| {side} | {ms:.2f} | {ws:.2f} | {100 * statistics.median(rm):+.2f}% | "
          f"{100 * statistics.median(rs):+.2f}% ({100 * rs[0]:+.1f}% … {100 * rs[-1]:+.1f}%) |")
PYEOF
