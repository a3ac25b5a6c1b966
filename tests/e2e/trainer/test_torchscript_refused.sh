#!/usr/bin/env bash
# A model scripted by PyTorch 2.x given to the worker of the 1.13 line (issue 27): `mtrain launch`
# refuses it before any rank starts — one paragraph naming the file, which PyTorch saved it, this
# worker's LibTorch, the first unknown operator and the command that builds mtrain against the
# user's PyTorch — exit 2. The worker on its own (a rank handed the file on another host) says
# the same in one paragraph, never LibTorch's dump of the TorchScript source.
. "$(dirname "$0")/../lib.sh"
BIN113=${MTRAIN_113_BIN_DIR:-}
[ -n "$BIN113" ] && [ -x "$BIN113/mtrain-worker" ] && [ -x "$BIN113/mtrain" ] \
  || skip "no 1.13 build (MTRAIN_113_BIN_DIR='$BIN113'; scripts/test builds it in build-1.13)"
PY2=${MTRAIN_PEERS_PYTHON:-}
[ -n "$PY2" ] && "$PY2" -c 'import sys, torch, torchvision; sys.exit(int(torch.__version__.split(".")[0]) < 2)' 2>/dev/null \
  || skip "no PyTorch 2.x with torchvision (MTRAIN_PEERS_PYTHON='$PY2'; scripts/python-env makes one)"
grep -q '"libtorch": "1\.' "$BIN113/mtrain-worker.facts.json" || skip "$BIN113/mtrain-worker is not the 1.13 line"
GOLDEN="$(dirname "$0")/torchscript_golden.py"
for kind in vit sdpa; do
  mkdir -p "$WORK/$kind"
  "$PY2" -W ignore "$GOLDEN" "make-$kind" "$WORK/$kind" || { fail "scripting $kind with $PY2"; finish; }
done

for kind in vit sdpa; do
  timeout -k 5 120 "$BIN113/mtrain" launch --nproc-per-node 2 --master-port 0 --max-steps 2 --model torchscript \
    --model-path "$WORK/$kind/net.pt" --data tensors --data-path "$WORK/$kind/data.pt" \
    --set model.loss=cross_entropy --work-dir "$WORK/wd-$kind" >"$WORK/out" 2>&1
  rc=$?
  expect_rc 2 "$kind scripted by 2.x, 1.13 launcher"
  for text in "error: model.path: the TorchScript model '$WORK/$kind/net.pt' cannot run in this mtrain-worker" \
      "saved by PyTorch 2.x" "LibTorch 1.13" "--torch python" "MTRAIN_PYTHON=\$(command -v python3)"; do
    expect_in "$WORK/out" "$text"
  done
  grep -qE "calls (aten|prim)::[a-z_]+ \(code/" "$WORK/out" && ok "$kind: names the first unknown operator and where" \
    || { fail "$kind: no operator named"; cat "$WORK/out"; }
  [ "$(grep -c . "$WORK/out")" -eq 1 ] && ok "$kind: one paragraph" || { fail "$kind: more than one line"; cat "$WORK/out"; }
  expect_not_in "$WORK/out" "[rank"
  [ ! -e "$WORK/wd-$kind" ] && ok "$kind: no rank started (no work dir)" || fail "$kind: a work dir was made"
  sed 's/^/    | /' "$WORK/out"
done

# The worker alone (as a rank would run it): one paragraph, exit 2, no TorchScript source dump.
(cd "$WORK" && timeout -k 5 120 "$BIN113/mtrain-worker" --set model.name=torchscript \
  --set model.path="$WORK/sdpa/net.pt" --set data.name=tensors --set data.path="$WORK/sdpa/data.pt" \
  --set train.max_steps=1 --set train.work_dir="$WORK/wd-worker") >"$WORK/wout" 2>&1
rc=$?
expect_rc 2 "the 1.13 worker alone"
expect_in "$WORK/wout" "calls aten::scaled_dot_product_attention, which LibTorch 1.13"
expect_in "$WORK/wout" "--torch python"
expect_not_in "$WORK/wout" "<--- HERE"
expect_not_in "$WORK/wout" "Serialized"
sed 's/^/    | /' "$WORK/wout"
finish
