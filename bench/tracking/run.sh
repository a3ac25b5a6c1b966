#!/usr/bin/env bash
# Tracking overhead (issue 42, must be < 1%): the demo job (`scripts/demo`: 2 ranks, ddp, the
# default gpt, 200 steps, a log line every 10) run ROUNDS times on each side — off,
# log.tensorboard, log.mlflow.uri to an `mlflow server` this script starts on 127.0.0.1 (SQLite
# store in a temporary folder) — interleaved, the order rotated each round, so that drift of a
# shared machine falls on every side alike.
#
# Three figures per run:
# * CPU per step: the user+sys CPU time of the whole job (the launcher and every rank, with rank
#   0's TensorBoard writes and MLflow thread; getrusage of the waited-for children) over its
#   steps. Other processes' load barely moves it (it counts what the job ran, not what it
#   waited for), which is why it resolves a fraction of a percent where wall time cannot on a
#   shared machine. The MLflow server's own CPU is not in it (the server is not the job's).
# * the trainer's median step time (summary.json);
# * the loop's wall time per step, from the run folder's run.json (written before the tracker
#   starts) to its summary.json (after the last step, before the tracker's end).
# Overhead: each round's ratio to that round's off run; the median over rounds, and the min of
# each side over the rounds compared (the least disturbed run of each).
#
# usage: bench/tracking/run.sh [BUILD_DIR]    env: ROUNDS (7)  EXTRA (more flags, e.g. --max-steps 100)
#        NPROC (2)  MLFLOW_PY (python with mlflow: .venv/bin/python of this tree)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
mtrain=$build/bin/mtrain
rounds=${ROUNDS:-7}
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
# Runs a command, then prints the user+sys CPU seconds of it and everything it waited for.
cpu_of() {
  python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:], stdout=open(sys.argv[1], "w"), stderr=subprocess.STDOUT)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(u.ru_utime + u.ru_stime)
sys.exit(rc)' "$@"
}
for r in $(seq "$rounds"); do
  for i in 0 1 2; do
    side=${sides[$(((i + r) % 3))]}
    wd=$work/$side$r
    # shellcheck disable=SC2046,SC2086
    cpu=$(cpu_of "$wd.log" "$mtrain" launch --nproc-per-node "$nproc" --strategy ddp --master-port auto --work-dir "$wd" \
      $(args_of "$side") ${EXTRA:-}) || { cat "$wd.log"; exit 1; }
    run=$(find "$wd" -mindepth 1 -maxdepth 1 -name '2*' -type d | head -1)
    python3 - "$run" "$side" "$r" "$cpu" >>"$work/results" <<'PYEOF'
import json, os, sys
run, side, r, cpu = sys.argv[1:5]
s = json.load(open(os.path.join(run, "summary.json")))
steps = s["steps"]  # a fresh run: its steps are this run's
wall = (os.stat(os.path.join(run, "summary.json")).st_mtime_ns - os.stat(os.path.join(run, "run.json")).st_mtime_ns) / 1e9
logged = sum(1 for l in open(os.path.join(run, "metrics.jsonl")) if '"mode":"train"' in l)
print(r, side, s["step_time_median_s"], wall / steps, float(cpu) / steps, logged, steps)
PYEOF
    tail -1 "$work/results" | awk '{printf "round %s %-11s median step %.2f ms, loop %.2f ms/step, CPU %.2f ms/step\n", $1, $2, $3*1e3, $4*1e3, $5*1e3}'
  done
done
python3 - "$work/results" "$rounds" "$*" "${EXTRA:-}" "$nproc" <<'PYEOF'
import collections, os, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
fig = collections.defaultdict(lambda: collections.defaultdict(dict))
logged, steps = {}, {}
for r, side, m, w, c, n, k in rows:
    fig["step"][side][r], fig["wall"][side][r], fig["cpu"][side][r] = float(m), float(w), float(c)
    logged[side, r], steps[side, r] = int(n), int(k)
load = os.getloadavg()
extra = (f" NPROC={sys.argv[5]}" if sys.argv[5] != "2" else "") + (f" EXTRA='{sys.argv[4]}'" if sys.argv[4] else "")
print(f"\n`ROUNDS={sys.argv[2]}{extra} bench/tracking/run.sh {sys.argv[3]}`".rstrip()
      + f" — load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min), {os.cpu_count()} CPUs\n")
def pct(x):
    return f"{100 * x:+.2f}%"
def med_min(d):
    return f"{1e3 * statistics.median(d.values()):.2f} ({1e3 * min(d.values()):.2f})"
print("| tracking | job CPU per step, median (min) ms | CPU overhead, median of rounds (range) | CPU, min vs min "
      "| extra CPU per logging step (ms) | median step (ms) | loop wall per step, median (min) ms "
      "| wall overhead, median of rounds (range) |")
print("|---|---|---|---|---|---|---|---|")
off = fig["cpu"]["off"]
for side in ("off", "tensorboard", "mlflow"):
    c, w, m = fig["cpu"][side], fig["wall"][side], fig["step"][side]
    head = f"| {side} | {med_min(c)} |"
    tail = f" {1e3 * statistics.median(m.values()):.2f} | {med_min(w)} |"
    if side == "off":
        print(head + " — | — | — |" + tail + " — |")
        continue
    rc = sorted(c[r] / off[r] - 1 for r in c)
    rw = sorted(w[r] / fig["wall"]["off"][r] - 1 for r in w)
    per_log = statistics.median((c[r] - off[r]) * steps[side, r] * 1e3 / max(1, logged[side, r]) for r in c)
    print(head + f" {pct(statistics.median(rc))} ({pct(rc[0])} … {pct(rc[-1])}) | {pct(min(c.values()) / min(off.values()) - 1)} "
          f"| {per_log:+.2f} |" + tail + f" {pct(statistics.median(rw))} ({pct(rw[0])} … {pct(rw[-1])}) |")
PYEOF
