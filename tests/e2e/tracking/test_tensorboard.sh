#!/usr/bin/env bash
# log.tensorboard (issue 42): the real `tensorboard` package reads the event files of the bundled
# trainer and gets exactly the scalars of metrics.jsonl — across a resume that retrains steps an
# earlier run already logged (no step twice, none missing) and a `--resume auto` continuation,
# all in the one TensorBoard run named like the first run folder; the resolved job as text.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/tracking_lib.sh"
need_tracking tensorboard
job=("${small[@]}" --work-dir "$WORK/wd" --set log.tensorboard="$WORK/tb" --set train.log_interval=5
     --set train.val_interval=10 --set train.val_steps=2 --set checkpoint.interval=10 --set checkpoint.keep=10)

run_mtrain "$WORK/run1" launch "${job[@]}" --max-steps 40
expect_rc 0 "run 1: 40 steps"
# Run 2 resumes from step 20 and retrains 21-40, which run 1 already logged.
run_mtrain "$WORK/run2" launch "${job[@]}" --max-steps 40 --resume "$WORK/wd/checkpoints/step_20"
expect_rc 0 "run 2: resumed at step 20"
run_mtrain "$WORK/run3" launch "${job[@]}" --max-steps 60 --resume auto
expect_rc 0 "run 3: --resume auto to step 60"
expect_in "$WORK/run3" "Resumed from"

"$TRACK_PY" - "$WORK/wd" "$WORK/tb" <<'PYEOF' && ok "TensorBoard reads the same scalars as metrics.jsonl, each step once" || fail "event files"
import json, math, os, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.text import metadata as text_metadata
wd, tb = sys.argv[1], sys.argv[2]
runs = sorted(d for d in os.listdir(wd) if d[:8].isdigit())
assert len(runs) == 3, runs
assert os.listdir(tb) == [runs[0]], (os.listdir(tb), runs)  # one TensorBoard run: the first folder's name
for r in runs[1:]:
    assert json.load(open(os.path.join(wd, r, "run.json")))["tracking_run"] == runs[0]
# What TensorBoard should show: each run's metrics.jsonl, later runs replacing the steps they
# retrain (a resumed run's START record makes TensorBoard drop what came after its checkpoint).
expected = {}
for r in runs:
    for line in open(os.path.join(wd, r, "metrics.jsonl")):
        rec = json.loads(line)
        for k, v in rec.items():
            if k in ("mode", "step", "epoch", "iter") or not isinstance(v, (int, float)):
                continue
            series = expected.setdefault(rec["mode"] + "/" + k, {})
            series[rec["step"]] = float(v)
acc = EventAccumulator(os.path.join(tb, runs[0]), size_guidance={"scalars": 0, "tensors": 0})
acc.Reload()
tags = set(acc.Tags()["scalars"])
for need in ("train/loss", "train/lr", "train/time", "train/memory", "train/samples_per_s", "train/tokens_per_s",
             "val/loss", "val/perplexity"):
    assert need in tags, (need, sorted(tags))
for tag, series in expected.items():
    events = acc.Scalars(tag)
    steps = [e.step for e in events]
    assert steps == sorted(set(steps)), (tag, steps)  # each step once, in order
    assert steps == sorted(series), (tag, steps, sorted(series))
    for e in events:
        want = series[e.step]
        assert math.isclose(e.value, want, rel_tol=1e-6, abs_tol=1e-30), (tag, e.step, e.value, want)
assert [e.step for e in acc.Scalars("train/loss")] == list(range(5, 61, 5))
# The resolved job, as text, once per run.
job = acc.Tensors("job")
assert len(job) == 3, len(job)
text = job[0].tensor_proto.string_val[0].decode()
assert '"max_steps": 40' in text and '"tensorboard":' in text, text[:300]
assert acc.SummaryMetadata("job").plugin_data.plugin_name == text_metadata.PLUGIN_NAME
print("tags:", len(tags), "train/loss steps:", [e.step for e in acc.Scalars("train/loss")])
PYEOF
finish
