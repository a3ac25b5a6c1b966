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

# --device-memory 0 is refused, not read as "detect it".
run_mtrain "$WORK/zero.out" estimate --model mlp --device-memory 0
expect_rc 2 "estimate --device-memory 0"
expect_in "$WORK/zero.out" "0 bytes"
finish
