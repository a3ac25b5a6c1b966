#!/usr/bin/env bash
# log.mlflow.uri (issue 42) against a real `mlflow server` on 127.0.0.1 with a temporary backend
# store: the run's parameters, metrics per logging step (equal to metrics.jsonl), tags, artifacts
# (model.safetensors, summary.json through the artifact proxy) and status FINISHED, read back with
# the mlflow client; a run stopped by SIGTERM to the launcher ends KILLED; a run whose rank 1 is
# killed with no restarts left, and one whose rank 0 is killed outright, end FAILED with the
# launcher's failure report's first line as the tag mtrain.failure; a tiny model logging every
# step for 2000 steps ends FINISHED with every metric point and its artifacts (the backlog goes
# out in batches, the status and artifacts after it). About 40 s on a 2-core machine, most of it
# the server's start and the 2000 steps.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/tracking_lib.sh"
need_tracking mlflow
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
uri="http://127.0.0.1:$port"
"$TRACK_PY" -m mlflow server --host 127.0.0.1 --port "$port" --workers 1 \
  --backend-store-uri "sqlite:///$WORK/mlflow.db" --artifacts-destination "$WORK/artifacts" >"$WORK/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 120); do
  "$PY" -c "import urllib.request; urllib.request.urlopen('$uri/health', timeout=1)" 2>/dev/null && break
  sleep 0.5
done
"$PY" -c "import urllib.request; urllib.request.urlopen('$uri/health', timeout=1)" 2>/dev/null ||
  { sed 's/^/    | /' "$WORK/server.log" | tail -20; fail "mlflow server did not start"; finish; }

run_mtrain "$WORK/run" launch "${small[@]}" --work-dir "$WORK/wd" --max-steps 30 --set train.log_interval=5 \
  --set log.mlflow.uri="$uri" --set log.mlflow.experiment=e2e --set log.mlflow.run_name=first \
  --set 'log.mlflow.tags=[team=nlp, stage=test]'
expect_rc 0 "training with MLflow tracking"
expect_not_in "$WORK/run" "warning: MLflow"

# SIGTERM to the launcher (a scheduler's cancel): the ranks checkpoint and exit, the run ends KILLED.
"$MTRAIN" launch "${small[@]}" --work-dir "$WORK/wd2" --max-steps 100000 --set train.log_interval=5 \
  --set log.mlflow.uri="$uri" --set log.mlflow.experiment=e2e --set log.mlflow.run_name=stopped >"$WORK/run2" 2>&1 &
launcher=$!
bound $launcher 120
wait_for "$WORK/wd2/metrics.jsonl" "\"step\"" 60
kill -TERM $launcher
wait $launcher; rc=$?; kill $watchdog 2>/dev/null
expect_rc 143 "stopped by SIGTERM"
expect_in "$WORK/run2" "preempted by SIGTERM"

# Rank 1 SIGKILLed, no restarts left, the launcher's default grace period (5 s): rank 0 fails in a
# collective with the dead rank while the launcher tears it down, and must still end the run
# FAILED with its failure's first line before the SIGKILL (it used to spend the grace naming the
# absent ranks, and the run stayed RUNNING); the launcher then replaces the tag with its report's
# first line, which names the job and attempt (the report names the root-cause rank).
export TMPDIR="$WORK"  # the ranks' job files: the victim search matches this test's ranks only
"$MTRAIN" launch "${small[@]:2}" --nproc-per-node 2 --work-dir "$WORK/wd3" --max-steps 100000 \
  --set train.log_interval=5 --set log.mlflow.uri="$uri" --set log.mlflow.experiment=e2e \
  --set log.mlflow.run_name=failed >"$WORK/run3" 2>&1 &
launcher=$!
bound $launcher 120
wait_for "$WORK/wd3/metrics.jsonl" "\"step\"" 60
for p in $(pgrep -f "mtrain-worker --job $WORK"); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=1" && kill -KILL "$p"
done
wait $launcher; rc=$?; kill $watchdog 2>/dev/null
expect_rc 137 "rank 1 killed: the job fails with its signal"
expect_in "$WORK/run3" "failed on attempt 0 (max restarts 0)"
expect_in "$WORK/run3" "rank 0 (local rank 0, host $(hostname), pid"
grep -q "^\[[^]]*:0\] \[rank 0\] error: " "$WORK/run3" && ok "rank 0 reported its failure before the teardown's SIGKILL" \
  || { fail "rank 0 was killed before it reported its failure"; sed 's/^/    | /' "$WORK/run3"; }
grep -m1 '^mtrain: job .* failed on attempt 0' "$WORK/run3" >"$WORK/failure_line"

# Rank 0 SIGKILLed: it sets no status; the launcher, after its report, ends the run FAILED with
# the report's first line (rank 0 left the run's id in the launcher's folder for it).
"$MTRAIN" launch "${small[@]}" --work-dir "$WORK/wd4" --max-steps 100000 --set train.log_interval=5 \
  --set log.mlflow.uri="$uri" --set log.mlflow.experiment=e2e --set log.mlflow.run_name=rank0killed >"$WORK/run4" 2>&1 &
launcher=$!
bound $launcher 120
wait_for "$WORK/wd4/metrics.jsonl" "\"step\"" 60
for _ in $(seq 100); do [ -n "$(find "$WORK" -path '*/attempt_0/0/mlflow_run.json' 2>/dev/null)" ] && break; sleep 0.2; done
for p in $(pgrep -f "mtrain-worker --job $WORK"); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=0" && kill -KILL "$p"
done
wait $launcher; rc=$?; kill $watchdog 2>/dev/null
expect_rc 137 "rank 0 killed: the job fails with its signal"
expect_not_in "$WORK/run4" "could not mark MLflow run"
grep -m1 '^mtrain: job .* failed on attempt 0' "$WORK/run4" >"$WORK/killed_line"

# A backlog: a tiny model logging every step for 2000 steps, far faster than one request per
# step could keep up with. Every point, the artifacts and FINISHED must arrive.
t0=$(date +%s.%N)
run_mtrain "$WORK/run5" launch --nproc-per-node 1 --set launch.device=cpu --model mlp --set model.hidden=8 \
  --set model.depth=1 --set train.batch_size=2 --master-port auto --work-dir "$WORK/wd5" --max-steps 2000 \
  --set train.log_interval=1 --set log.mlflow.uri="$uri" --set log.mlflow.experiment=e2e --set log.mlflow.run_name=backlog
expect_rc 0 "2000 logged steps with MLflow tracking"
expect_not_in "$WORK/run5" "warning: MLflow"
echo "  (2000 logged steps took $("$PY" -c "import time; print(round(time.time() - $t0, 1))") s)"

"$TRACK_PY" - "$uri" "$WORK/wd" "$WORK/failure_line" "$WORK/killed_line" "$WORK/wd5" <<'PYEOF' && ok "mlflow reads back params, metrics, tags, artifacts and status" || fail "mlflow run"
import json, os, sys, tempfile
import mlflow
from mlflow.tracking import MlflowClient
uri, wd, wd5 = sys.argv[1], sys.argv[2], sys.argv[5]
failure_line, killed_line = (open(f).read().rstrip("\n") for f in sys.argv[3:5])
c = MlflowClient(tracking_uri=uri)
exp = c.get_experiment_by_name("e2e")
runs = {r.info.run_name: r for r in c.search_runs([exp.experiment_id])}
assert set(runs) == {"first", "stopped", "failed", "rank0killed", "backlog"}, set(runs)
r = runs["first"]
assert r.info.status == "FINISHED", r.info.status
assert r.data.params["train.max_steps"] == "30" and r.data.params["strategy"] == "ddp", r.data.params
assert r.data.params["log.mlflow.uri"] == uri
assert r.data.tags["team"] == "nlp" and r.data.tags["stage"] == "test", r.data.tags
run_dir = os.path.join(wd, os.readlink(os.path.join(wd, "latest")))
want = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl"))]
train = [w for w in want if w["mode"] == "train"]
hist = c.get_metric_history(r.info.run_id, "train/loss")
assert [m.step for m in hist] == [w["step"] for w in train], [m.step for m in hist]
assert all(abs(m.value - w["loss"]) <= 1e-9 * max(1, abs(w["loss"])) for m, w in zip(hist, train))
assert [m.step for m in c.get_metric_history(r.info.run_id, "val/perplexity")] == [w["step"] for w in want if w["mode"] == "val"]
for k in ("train/lr", "train/time", "train/memory", "train/samples_per_s", "train/tokens_per_s"):
    assert len(c.get_metric_history(r.info.run_id, k)) == len(train), k
names = sorted(a.path for a in c.list_artifacts(r.info.run_id))
assert names == ["model.safetensors", "summary.json"], names
d = tempfile.mkdtemp()
got = c.download_artifacts(r.info.run_id, "model.safetensors", d)
assert open(got, "rb").read() == open(os.path.join(wd, "model.safetensors"), "rb").read()
got = c.download_artifacts(r.info.run_id, "summary.json", d)
assert json.load(open(got))["steps"] == 30
s = runs["stopped"]
assert s.info.status == "KILLED", s.info.status
assert "mtrain.failure" not in s.data.tags, s.data.tags
f = runs["failed"]
assert f.info.status == "FAILED", f.info.status
assert failure_line.startswith("mtrain: job ") and f.data.tags["mtrain.failure"] == failure_line, (f.data.tags, failure_line)
k = runs["rank0killed"]
assert k.info.status == "FAILED", k.info.status
assert killed_line.startswith("mtrain: job ") and k.data.tags["mtrain.failure"] == killed_line, (k.data.tags, killed_line)
b = runs["backlog"]
assert b.info.status == "FINISHED", b.info.status
run_dir = os.path.join(wd5, os.readlink(os.path.join(wd5, "latest")))
train = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl"))]
train = [w for w in train if w["mode"] == "train"]
assert len(train) == 2000, len(train)
points = 0
for key in ("loss", "lr", "time", "data_time", "memory"):
    h = c.get_metric_history(b.info.run_id, "train/" + key)
    assert sorted(m.step for m in h) == [w["step"] for w in train], (key, len(h))
    points += len(h)
assert sorted(a.path for a in c.list_artifacts(b.info.run_id)) == ["model.safetensors", "summary.json"]
print("runs:", {n: x.info.status for n, x in runs.items()}, "loss points:", len(hist), "backlog points read:", points)
PYEOF
finish
