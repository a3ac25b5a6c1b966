#!/usr/bin/env bash
# Run folders: two runs of the bundled trainer in turn into one work dir keep both runs' logs and
# metrics (work_dir/<YYYYmmdd_HHMMSS>/), --resume auto still finds the newest checkpoint, and
# `mtrain runs` lists both (text and JSON) and `mtrain runs plot` draws them on one chart.
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
WD=$WORK/wd
train() {  # train OUT ARGS...: a short mlp run into $WD
  local out=$1; shift
  run_mtrain "$out" launch --model mlp --master-port 0 --work-dir "$WD" \
    --set train.log_interval=1 --set train.val_interval=2 --set train.val_steps=2 "$@"
}
train "$WORK/run1" --max-steps 4
expect_rc 0 "first run"
# A fresh run beside the first one's checkpoints says so: --overwrite (issue 45).
train "$WORK/run2" --strategy zero1 --nproc-per-node 2 --max-steps 6 --overwrite
expect_rc 0 "second run (zero1, 2 ranks)"

runs=$(find "$WD" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended -regex '.*/[0-9]{8}_[0-9]{6}(_[0-9]+)?' | sort)
n=$(echo "$runs" | grep -c .)
[ "$n" -eq 2 ] && ok "two run folders: $(echo $runs | xargs -n1 basename | tr '\n' ' ')" || fail "expected 2 run folders, found $n"
first=$(echo "$runs" | head -1) second=$(echo "$runs" | tail -1)
for r in "$first" "$second"; do
  for f in run.json metrics.jsonl summary.json; do [ -s "$r/$f" ] && ok "$(basename "$r")/$f" || fail "$(basename "$r") lacks $f"; done
done
"$PY" - "$first" "$second" "$WD" <<'PYEOF' && ok "each run keeps its own metrics; work_dir links point at the newest" || fail "run folder contents"
import json, os, sys
first, second, wd = sys.argv[1:4]
s1 = json.load(open(os.path.join(first, "summary.json"))); s2 = json.load(open(os.path.join(second, "summary.json")))
assert s1["steps"] == 4 and s1["world_size"] == 1 and s1["strategy"] == "ddp", s1
assert s2["steps"] == 6 and s2["world_size"] == 2 and s2["strategy"] == "zero1", s2
steps1 = [json.loads(l)["step"] for l in open(os.path.join(first, "metrics.jsonl")) if json.loads(l)["mode"] == "train"]
assert steps1 == [1, 2, 3, 4], steps1
assert os.path.realpath(os.path.join(wd, "latest")) == os.path.realpath(second)
assert json.load(open(os.path.join(wd, "summary.json")))["steps"] == 6
PYEOF

# --resume auto finds the newest checkpoint (they stay in work_dir/checkpoints) and starts a third run folder.
train "$WORK/run3" --strategy zero1 --nproc-per-node 2 --max-steps 8 --resume auto
expect_rc 0 "third run resumes"
expect_in "$WORK/run3" "Resumed from $WD/checkpoints/step_6"

run_mtrain "$WORK/list" runs "$WD"
expect_rc 0 "mtrain runs"
cat "$WORK/list"
expect_in "$WORK/list" "STRATEGY"
expect_in "$WORK/list" "zero1"
# The resumed third launch continues the second run: one row, its steps per launch (issue 45).
[ "$(grep -c finished "$WORK/list")" -eq 2 ] && ok "two finished runs listed (the resumed launch joined)" || fail "runs table"
expect_in "$WORK/list" "8/8 (2 segments: 6 + 2 steps)"
run_mtrain "$WORK/list.json" runs "$(dirname "$WD")" --format json
expect_rc 0 "mtrain runs --format json (folder of work dirs)"
"$PY" - "$WORK/list.json" <<'PYEOF' && ok "JSON lists the runs with their figures" || fail "runs JSON"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert len(runs) == 2, runs
assert [r["strategy"] for r in runs] == ["ddp", "zero1"], runs
assert [r["steps"] for r in runs] == [4, 8] and runs[1]["world_size"] == 2
assert [s["start_step"] for s in runs[1]["segments"]] == [0, 6] and runs[1]["steps_run"] == 8, runs[1]
assert [p[0] for p in runs[1].get("loss", [[s] for s in range(1, 9)])] == list(range(1, 9))
assert all(r["state"] == "finished" and r["final_loss"] is not None and r["final_val_loss"] is not None for r in runs)
assert all(r["run"].startswith("wd/") for r in runs)
PYEOF

command -v gnuplot >/dev/null || skip "gnuplot is not installed (apt-get install gnuplot-nox)"
run_mtrain "$WORK/plot" runs plot "$first" "$second" -o "$WORK/loss.png"
expect_rc 0 "runs plot to PNG"
size=$(stat -c %s "$WORK/loss.png" 2>/dev/null || echo 0)
[ "$size" -gt 10000 ] && ok "loss.png is $size bytes" || fail "loss.png is $size bytes"
run_mtrain "$WORK/plot.json" runs plot "$first" "$WD" -o "$WORK/loss.svg" --format json
expect_rc 0 "runs plot to SVG with --format json"
grep -q "<svg" "$WORK/loss.svg" && ok "loss.svg is an SVG" || fail "loss.svg"
"$PY" - "$WORK/plot.json" <<'PYEOF' && ok "plot JSON has the run folder and every run of the work dir, joined" || fail "plot JSON"
import json, sys
j = json.load(open(sys.argv[1]))
# $first, then $WD's two runs (issue 45: a work dir was its newest run only); the resumed one is one curve.
assert len(j["runs"]) == 3 and j["output"].endswith("loss.svg"), j["runs"]
assert [p[0] for p in j["runs"][2]["loss"]] == list(range(1, 9)), j["runs"][2]["loss"]
assert len(j["runs"][0]["loss"]) == 4 and len(j["runs"][0]["val"]) >= 2
PYEOF
run_mtrain "$WORK/bad" runs plot "$first" -o "$WORK/loss.jpg"
expect_rc 2 "runs plot to .jpg"
expect_in "$WORK/bad" ".png or .svg"
finish
