#!/usr/bin/env bash
# Issue 40 item 12: `mtrain estimate` checks the model file as `mtrain launch` does before any
# probe runs (the archive's records, the trust check, the worker's LibTorch), so a model launch
# would refuse is refused here too, with the same paragraph and exit 2 — before, the probe loaded
# it (or failed) and estimate exited 1. And `--model-path ""` is a value, not a way to swallow
# the next flag.
. "$(dirname "$0")/../lib.sh"

# A zip that is no TorchScript archive (a torch.save-like folder without code/).
"$PY" - "$WORK/state.pt" <<'PYEOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("state/data.pkl", b"\x80\x02}q\x00.")
    z.writestr("state/version", b"3\n")
PYEOF
"$TORCH_PY" -c 'import sys, torch; torch.save({"input": torch.randn(8, 4), "target": torch.zeros(8, dtype=torch.long)}, sys.argv[1])' "$WORK/data.pt" 2>/dev/null ||
  skip "$TORCH_PY has no torch"
run_mtrain "$WORK/ts.out" estimate --model torchscript --model-path "$WORK/state.pt" --data tensors \
  --data-path "$WORK/data.pt" --device-memory 1GiB
expect_rc 2 "estimate of a file that is no TorchScript archive"
expect_in "$WORK/ts.out" "is not a TorchScript archive"

# An empty --model-path is the empty value: the torchscript model then has no file (exit 2, the
# setting named), and --batch-size after it is still read as a flag.
run_mtrain "$WORK/empty.out" estimate --model torchscript --model-path "" --batch-size 4 --device-memory 1GiB
expect_rc 2 "estimate --model-path \"\""
expect_in "$WORK/empty.out" "model.path"
expect_not_in "$WORK/empty.out" "--batch-size' is not"
# launch rewrote it as "--model-path=", which CLI11 reads as the flag alone, taking --max-steps as
# the path and 7 as the program.
run_mtrain "$WORK/launch.out" launch --model-path "" --max-steps 7 --dry-run --nproc-per-node 1 -- true
expect_rc 0 "launch --model-path \"\" --max-steps 7 --dry-run"
expect_in "$WORK/launch.out" "model.path=, train.max_steps=7"

# Issue 45 item 3: a model the probe refuses as bad input (a scripted module without loss() while
# model.loss is auto) gets the worker's own paragraph, exit 2, and no internal command line —
# before, "estimate: `…/mtrain-worker estimate-probe --job /tmp/… --batches 1,2,4,8 …` failed".
"$TORCH_PY" - "$WORK/noloss.pt" <<'PYEOF' 2>/dev/null
import sys, torch
torch.jit.script(torch.nn.Linear(4, 3)).save(sys.argv[1])
PYEOF
run_mtrain "$WORK/noloss.out" estimate --model torchscript --model-path "$WORK/noloss.pt" --data tensors \
  --data-path "$WORK/data.pt" --device-memory 1GiB
expect_rc 2 "estimate of a model without loss() and model.loss auto"
expect_in "$WORK/noloss.out" "set model.loss to cross_entropy"
expect_not_in "$WORK/noloss.out" "estimate-probe"
expect_not_in "$WORK/noloss.out" "--job"

# Issue 45 item 3, one fit check: with --device-memory the launch measures the model as
# `mtrain estimate` does (runtime and activations included; before: formulas with both at 0, so
# mlp "needed 1.47 MiB" of a process of ~380 MiB, and TorchScript models were never checked) and
# says the same total; CPU ranks are not offered optimizer offload (it moves nothing off them).
run_mtrain "$WORK/fit.out" launch --nproc-per-node 1 --model mlp --max-steps 5 --work-dir "$WORK/wd_fit" --device-memory 1MiB
expect_rc 2 "launch of mlp in 1 MiB per rank: refused before any rank starts"
expect_not_in "$WORK/fit.out" "runtime 0 B"
expect_not_in "$WORK/fit.out" "offload_optimizer_device"
[ ! -d "$WORK/wd_fit" ] || [ -z "$(ls "$WORK/wd_fit")" ] && ok "no rank ran" || fail "the work dir was written: $(ls "$WORK/wd_fit")"
run_mtrain "$WORK/fit.json" estimate --nproc-per-node 1 --model mlp --device-memory 1MiB --format json
# The same total (each measures the process anew: within 2%).
"$PY" - "$WORK/fit.json" "$WORK/fit.out" <<'PYEOF' && ok "launch and estimate say the same total" || fail "launch and estimate disagree"
import json, re, sys
r = json.load(open(sys.argv[1]))["rows"][0]
est = r["bytes_per_rank"]["total"] / 1048576
got = float(re.search(r"ddp needs about ([0-9.]+) MiB", open(sys.argv[2]).read()).group(1))
print("estimate", round(est, 1), "MiB; launch", got, "MiB")
assert r["label"] == "ddp" and abs(got - est) <= 0.02 * est, (got, est)
PYEOF
"$TORCH_PY" - "$WORK/lin.pt" <<'PYEOF' 2>/dev/null
import sys, torch
torch.jit.script(torch.nn.Linear(4, 3)).save(sys.argv[1])
PYEOF
run_mtrain "$WORK/fit_ts.out" launch --nproc-per-node 2 --strategy zero3 --model torchscript --model-path "$WORK/lin.pt" \
  --set model.loss=cross_entropy --data tensors --data-path "$WORK/data.pt" --max-steps 5 --work-dir "$WORK/wd_ts" \
  --device-memory 100MiB
expect_rc 2 "launch of a TorchScript model in 100 MiB per rank: checked (measured) and refused"
expect_in "$WORK/fit_ts.out" "zero3 needs about"
# Without --device-memory on CPU ranks a TorchScript model is not sized: the launch says so once and trains.
run_mtrain "$WORK/unchecked.out" launch --nproc-per-node 1 --model torchscript --model-path "$WORK/lin.pt" \
  --set model.loss=cross_entropy --data tensors --data-path "$WORK/data.pt" --max-steps 2 --batch-size 4 \
  --set data.val_fraction=0 --work-dir "$WORK/wd_unchecked"
expect_rc 0 "an unsized TorchScript model on CPU ranks trains"
expect_in "$WORK/unchecked.out" "mtrain: note: this model starts without a fit check"

# Issue 45 item 3: a TorchScript model without --data exited 1 with the probe's internal command
# line; it is refused before the probe (exit 2) with what it needs (the job's cross-check), and so
# is a data file that is not there (the launch's file check, which estimate skipped: the probe
# failed on it). A built-in model needs no --data.
"$TORCH_PY" -c 'import sys, torch; torch.jit.save(torch.jit.script(torch.nn.Linear(4, 2)), sys.argv[1])' "$WORK/net.pt" 2>/dev/null
run_mtrain "$WORK/nodata.out" estimate --model torchscript --model-path "$WORK/net.pt" --device-memory 1GiB
expect_rc 2 "estimate of a TorchScript model without --data"
expect_in "$WORK/nodata.out" "--data tensors --data-path FILE"
expect_not_in "$WORK/nodata.out" "estimate-probe --job"
run_mtrain "$WORK/missing.out" estimate --model torchscript --model-path "$WORK/net.pt" --data tensors \
  --data-path "$WORK/missing.pt" --device-memory 1GiB
expect_rc 2 "estimate with a data file that is not there"
expect_in "$WORK/missing.out" "estimate measures the model with one forward/backward on its data, and"
expect_in "$WORK/missing.out" "missing.pt"
expect_not_in "$WORK/missing.out" "estimate-probe --job"
if [ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ]; then
  run_mtrain "$WORK/mlp.out" estimate --model mlp --batch-size 4 --set train.threads=1 --device-memory 1GiB
  expect_rc 0 "estimate of the built-in mlp without --data"
  expect_in "$WORK/mlp.out" "Ψ = "
fi

# --device-memory 0 is refused, not read as "detect it".
run_mtrain "$WORK/zero.out" estimate --model mlp --device-memory 0
expect_rc 2 "estimate --device-memory 0"
expect_in "$WORK/zero.out" "0 bytes"
finish
