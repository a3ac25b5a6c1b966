#!/usr/bin/env bash
# log.tensorboard across an elastic restart (issue 42 item 1): a job of 2 ranks with
# --max-restarts 1 logs to TensorBoard; rank 1 is SIGKILLed mid-run, after the checkpoint at step
# 10 and past it, so the first attempt has logged steps the second trains again. The launcher
# restarts the job, which resumes from its newest checkpoint by itself and finishes. TensorBoard's
# own reader (EventAccumulator of the pinned tensorboard) must give exactly the steps of
# metrics.jsonl — each once, none missing — with its values, in the one TensorBoard run of the
# training.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/tracking_lib.sh"
need_tracking tensorboard
export TMPDIR="$WORK"  # the ranks' job files land here: pause_ranks and the victim search match this test only
STEPS=40
# Steps of ~40 ms: rank 0 writes step 12 to metrics.jsonl itself (no relay), and the ranks are
# stopped within a poll (0.1 s, a few steps), well before the next checkpoint at step 20.
"$MTRAIN" launch --nproc-per-node 2 --max-restarts 1 --grace-period 2 --master-port auto \
  --set launch.device=cpu --set model.n_layer=2 --set model.n_embd=64 --set model.block_size=64 \
  --set train.batch_size=8 --set train.threads=1 --optim sgd --lr 0.05 --seed 3 --max-steps $STEPS \
  --set train.log_interval=2 --set train.val_interval=10 --set train.val_steps=1 --checkpoint-interval 10 \
  --set checkpoint.keep=10 --work-dir "$WORK/wd" --set log.tensorboard="$WORK/tb" >"$WORK/out" 2>&1 &
launcher=$!
bound $launcher 150
# Rank 1 dies once attempt 0 has checkpointed step 10 and logged steps past it.
if wait_for "$WORK/wd/latest/metrics.jsonl" '"step": ?12,' 100; then
  pause_ranks STOP
  victim=""
  for p in $(pgrep -f "mtrain-worker --job $WORK"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=1" && victim=$p
  done
  [ -n "$victim" ] && ok "found rank 1 (pid $victim) past step 12" || fail "rank 1 not found"
  [ -n "$victim" ] && kill -KILL "$victim"
  pause_ranks CONT
else
  fail "attempt 0 did not reach step 12"
fi
wait $launcher; rc=$?; kill $watchdog 2>/dev/null
expect_rc 0 "the job finished after the restart"
expect_in "$WORK/out" "restart 1"
expect_in "$WORK/out" "Resumed from"

"$TRACK_PY" - "$WORK/wd" "$WORK/tb" "$STEPS" <<'PYEOF' && ok "TensorBoard reads the scalars of metrics.jsonl across the restart, each step once" || { fail "event files"; sed 's/^/    | /' "$WORK/out"; }
import json, math, os, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
wd, tb, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = sorted(d for d in os.listdir(wd) if d[:8].isdigit())
assert len(runs) == 2, runs  # attempt 0 and the restarted attempt 1
assert os.listdir(tb) == [runs[0]], (os.listdir(tb), runs)
assert json.load(open(os.path.join(wd, runs[1], "run.json")))["tracking_run"] == runs[0]
start = json.load(open(os.path.join(wd, runs[1], "run.json")))["start_step"]
logged0 = [json.loads(l)["step"] for l in open(os.path.join(wd, runs[0], "metrics.jsonl"))]
assert start == 10 and max(logged0) > start, (start, logged0)  # attempt 1 retrains steps attempt 0 logged
# What TensorBoard should show: attempt 0's records up to its checkpoint, then attempt 1's.
expected = {}
for r in runs:
    for line in open(os.path.join(wd, r, "metrics.jsonl")):
        rec = json.loads(line)
        for k, v in rec.items():
            if k in ("mode", "step", "epoch", "iter") or not isinstance(v, (int, float)):
                continue
            expected.setdefault(rec["mode"] + "/" + k, {})[rec["step"]] = float(v)
acc = EventAccumulator(os.path.join(tb, runs[0]), size_guidance={"scalars": 0, "tensors": 0})
acc.Reload()
assert "train/loss" in acc.Tags()["scalars"] and "val/loss" in acc.Tags()["scalars"], acc.Tags()["scalars"]
for tag, series in expected.items():
    events = acc.Scalars(tag)
    got = [e.step for e in events]
    assert got == sorted(series), (tag, got, sorted(series))  # each step once, in order, none missing
    for e in events:
        assert math.isclose(e.value, series[e.step], rel_tol=1e-6, abs_tol=1e-30), (tag, e.step, e.value, series[e.step])
assert [e.step for e in acc.Scalars("train/loss")] == list(range(2, steps + 1, 2))
assert [e.step for e in acc.Scalars("val/loss")] == [10, 20, 30, 40]
print(f"    resumed at step {start}; attempt 0 logged up to step {max(logged0)}; "
      f"train/loss steps {[e.step for e in acc.Scalars('train/loss')]}")
PYEOF
no_survivors "mtrain-worker --job $WORK"
finish
