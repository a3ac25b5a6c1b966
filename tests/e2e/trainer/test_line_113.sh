#!/usr/bin/env bash
# The Debian LibTorch 1.13 line stays working beside the 2.x one (issue 27): build-1.13's mtrain
# trains the embedded default (what scripts/demo runs) with DDP on 2 ranks and its loss falls; a
# model scripted by Debian's PyTorch 1.13 trains under zero3 at world 2 and ends with PyTorch
# 1.13's own weights (SGD, 1e-6); `mtrain --version` names LibTorch 1.13 from the facts file.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/port_retry.sh"
BIN113=${MTRAIN_113_BIN_DIR:-}
[ -n "$BIN113" ] && [ -x "$BIN113/mtrain-worker" ] && [ -x "$BIN113/mtrain" ] \
  || skip "no 1.13 build (MTRAIN_113_BIN_DIR='$BIN113'; scripts/test builds it in build-1.13)"
MTRAIN=$BIN113/mtrain
timeout 10 "$MTRAIN" --version >"$WORK/version" 2>&1
expect_in "$WORK/version" "LibTorch 1.13"
expect_in "$WORK/version" "CPU only: no CUDA, no NCCL"

retry_port_clash "$WORK/out" launch --nproc-per-node 2 --master-port 0 --strategy ddp --max-steps 60 \
  --set train.threads=1 --work-dir "$WORK/wd"
expect_rc 0 "the embedded default on the 1.13 line"
"$PY" - "$WORK/wd" <<'PYEOF' && ok "the loss falls" || fail "the loss does not fall"
import json, os, sys
rows = [json.loads(l) for l in open(os.path.join(sys.argv[1], "metrics.jsonl"))]
losses = [r["loss"] for r in rows if "loss" in r and r.get("mode", "train") == "train"]
assert len(losses) >= 2 and losses[-1] < losses[0] - 0.5, losses
PYEOF

need_torch
GOLDEN="$(dirname "$0")/torchscript_golden.py"
"$PY" "$GOLDEN" make-lm "$WORK" || { fail "the Python 1.13 reference"; finish; }
retry_port_clash "$WORK/out" launch --nproc-per-node 2 --master-port 0 --strategy zero3 --max-steps 10 \
  --batch-size 3 --work-dir "$WORK/wd-lm" --model torchscript --model-path "$WORK/net.pt" --data tensors \
  --data-path "$WORK/data.pt" --set data.shuffle=false --set data.val_fraction=0 --set sched.name=constant \
  --set optim.name=sgd --set optim.lr=0.1 --set optim.weight_decay=0 --set train.threads=1 \
  --set zero.stage3_param_persistence_threshold=0
expect_rc 0 "a 1.13-scripted model under zero3 at world 2"
msg=$("$PY" "$GOLDEN" compare "$WORK/ref_sgd.pt" "$WORK/wd-lm/model.scripted.pt" 1e-6 2>&1) \
  && ok "PyTorch 1.13's weights: $msg" || fail "weights: $msg"
finish
