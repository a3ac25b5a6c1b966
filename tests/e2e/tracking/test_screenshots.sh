#!/usr/bin/env bash
# What a user sees of an mtrain run in TensorBoard and in the MLflow UI (issue 42 item 4): one run
# of the bundled trainer logs to both; the real TensorBoard server (on 127.0.0.1) lists the run
# and its scalar tags over its HTTP API, and headless Chromium renders its Scalars dashboard with
# the run's curves drawn (pixels of the run's colour in the charts, not an empty page); the real
# MLflow server's UI renders the run's metrics page the same way. MTRAIN_UPDATE_DOCS=1 keeps the
# two screenshots as docs/images/tensorboard.png and docs/images/mlflow.png (docs/tracking.md).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/tracking_lib.sh"
need_tracking tensorboard
need_tracking mlflow
"$TRACK_PY" -c "import PIL" 2>/dev/null || skip "$TRACK_PY has no PIL (pillow) to read the screenshots"
chrome=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chrome" ] || skip "chromium is not installed (Debian: apt-get install chromium; scripts/bootstrap installs it)"
free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_http() {  # URL SECONDS: until the URL answers 200
  for _ in $(seq $(($2 * 2))); do
    "$PY" -c "import urllib.request; urllib.request.urlopen('$1', timeout=1)" 2>/dev/null && return 0
    sleep 0.5
  done
  return 1
}
ml_port=$(free_port)
ml_uri="http://127.0.0.1:$ml_port"
"$TRACK_PY" -m mlflow server --host 127.0.0.1 --port "$ml_port" --workers 1 \
  --backend-store-uri "sqlite:///$WORK/mlflow.db" --artifacts-destination "$WORK/artifacts" >"$WORK/mlflow.log" 2>&1 &
servers=($!)
trap 'kill "${servers[@]}" 2>/dev/null; wait "${servers[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT
wait_http "$ml_uri/health" 60 || { tail -20 "$WORK/mlflow.log" | sed 's/^/    | /'; fail "mlflow server did not start"; finish; }

run_mtrain "$WORK/run" launch "${small[@]}" --work-dir "$WORK/wd" --max-steps 200 --set train.log_interval=5 \
  --set train.val_interval=50 --set log.tensorboard="$WORK/tb" --set log.mlflow.uri="$ml_uri" \
  --set log.mlflow.experiment=demo --set log.mlflow.run_name=gpt-demo
expect_rc 0 "one run logged to TensorBoard and MLflow"

tb_port=$(free_port)
"$TRACK_PY" -m tensorboard.main --logdir "$WORK/tb" --host 127.0.0.1 --port "$tb_port" >"$WORK/tb.log" 2>&1 &
servers+=($!)
tb_uri="http://127.0.0.1:$tb_port"
run=$(ls "$WORK/tb")
ready=0
for _ in $(seq 120); do  # TensorBoard loads event files in the background after it answers
  "$PY" - "$tb_uri" "$run" 2>/dev/null <<'PYEOF' && { ready=1; break; }
import json, sys, urllib.request
uri, run = sys.argv[1], sys.argv[2]
tags = json.load(urllib.request.urlopen(uri + "/data/plugin/scalars/tags", timeout=2))
assert {"train/loss", "train/lr", "val/loss"} <= set(tags.get(run, {})), tags
PYEOF
  sleep 0.5
done
[ "$ready" = 1 ] && ok "TensorBoard's API lists run $run with train/loss, train/lr and val/loss" \
  || { tail -20 "$WORK/tb.log" | sed 's/^/    | /'; fail "TensorBoard never listed the run's scalars"; }

# Headless Chromium: software GL (no GPU), virtual time so the page's scripts finish before the
# picture is taken. The Scalars dashboard draws its charts as SVG/canvas; Time Series needs WebGL.
shot() {  # URL PNG BUDGET_MS
  "$chrome" --headless --no-sandbox --use-angle=swiftshader --enable-unsafe-swiftshader --hide-scrollbars \
    --user-data-dir="$WORK/chrome-$(basename "$2" .png)" --window-size=1400,900 --virtual-time-budget="$3" \
    --screenshot="$2" "$1" >"$2.log" 2>&1
}
run_id=$("$TRACK_PY" - "$ml_uri" <<'PYEOF'
import sys
from mlflow.tracking import MlflowClient
c = MlflowClient(tracking_uri=sys.argv[1])
e = c.get_experiment_by_name("demo")
r = c.search_runs([e.experiment_id])[0]
print(f"{e.experiment_id}/runs/{r.info.run_id}")
PYEOF
)
# A drawn chart leaves thousands of pixels of the run's colour (TensorBoard's first run: #ff7043;
# MLflow's: #2272b4); a page whose charts did not render (blank, an error, WebGL missing, charts
# still loading) has a few hundred at most (measured: 5950 drawn vs 268 in TensorBoard's Time
# Series without WebGL, 538 for MLflow's page with its charts still loading).
drawn() {  # PNG R G B TOL: prints the count; true when the run's curves are drawn
  "$TRACK_PY" - "$@" <<'PYEOF'
import sys
from PIL import Image
path, rgb, tol = sys.argv[1], tuple(int(v) for v in sys.argv[2:5]), int(sys.argv[5])
im = Image.open(path).convert("RGB")
assert im.size == (1400, 900), (path, im.size)
data = im.get_flattened_data() if hasattr(im, "get_flattened_data") else im.getdata()
n = sum(1 for p in data if all(abs(a - b) <= tol for a, b in zip(p, rgb)))
print(n)
sys.exit(0 if n >= 2000 else 1)
PYEOF
}
# The UIs fetch their data after the page loads; on a busy machine a first picture may catch the
# charts still loading: up to three tries, each with more (virtual) time.
capture() {  # NAME URL R G B TOL
  local name=$1 url=$2 budget n
  for budget in 20000 40000 80000; do
    shot "$url" "$WORK/$name.png" "$budget"
    n=$(drawn "$WORK/$name.png" "$3" "$4" "$5" "$6") && { ok "$name: the run's curves are drawn ($n pixels of its colour)"; return 0; }
  done
  fail "$name: the charts never rendered ($n pixels of the run's colour; $(tail -3 "$WORK/$name.png.log" | tr '\n' ' '))"
}
capture tensorboard "$tb_uri/?darkMode=false#scalars&_smoothingWeight=0" 255 112 67 40
capture mlflow "$ml_uri/#/experiments/$run_id/model-metrics" 34 114 180 30
if [ -n "${MTRAIN_UPDATE_DOCS:-}" ]; then
  mkdir -p "$MTRAIN_SOURCE_DIR/docs/images"
  "$TRACK_PY" - "$WORK" "$MTRAIN_SOURCE_DIR/docs/images" <<'PYEOF'
import sys
from PIL import Image
for name in ("tensorboard", "mlflow"):
    Image.open(f"{sys.argv[1]}/{name}.png").convert("P", palette=Image.Palette.ADAPTIVE, colors=128).save(
        f"{sys.argv[2]}/{name}.png", optimize=True)
PYEOF
  ok "docs/images/tensorboard.png and docs/images/mlflow.png written"
fi
finish
