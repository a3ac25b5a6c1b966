#!/usr/bin/env bash
# model.pt loads with a plain torch.load (issue 44 item 3): PyTorch 2.x's defaults
# (weights_only=True, which refused LibTorch's torch.jit._pickle.restore_type_tag) and Debian's
# 1.13 both read the trainer's model.pt and a consolidated checkpoint as a dict of tensors equal to
# model.safetensors, bit for bit; mtrain reads its own model.pt back as model.init.
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_torch
PEERS=${MTRAIN_PEERS_PYTHON:-}
[ -n "$PEERS" ] && "$PEERS" -c 'import torch, safetensors' 2>/dev/null ||
  skip "no PyTorch 2.x with safetensors (scripts/python-env makes .venv)"
small=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=2 --set model.block_size=16
       --set train.batch_size=4 --set train.log_interval=2)

run_mtrain "$WORK/train" launch --master-port 0 "${small[@]}" --max-steps 3 \
  --set checkpoint.interval=3 --work-dir "$WORK/wd"
expect_rc 0 "the built-in gpt trains 3 steps"
ck=$(ls -d "$WORK"/wd/checkpoints/step_* 2>/dev/null | tail -1)
run_mtrain "$WORK/cons" checkpoint consolidate "$ck" -o "$WORK/consolidated.pt"
expect_rc 0 "consolidate -o consolidated.pt"

# Each Python loads the file with torch.load's defaults and writes what it read as exact lists.
cat >"$WORK/dump.py" <<'PYEOF'
import json, sys, torch
sd = torch.load(sys.argv[1])  # the defaults: weights_only=True on PyTorch >= 2.6
assert isinstance(sd, dict), type(sd)
assert all(isinstance(v, torch.Tensor) for v in sd.values())
json.dump({k: [str(v.dtype), list(v.shape), v.double().flatten().tolist()] for k, v in sd.items()},
          open(sys.argv[2], "w"))
print(torch.__version__, type(sd).__name__, len(sd), "tensors")
PYEOF
cat >"$WORK/compare.py" <<'PYEOF'
import json, sys
from safetensors.torch import load_file
ref = load_file(sys.argv[1])
got = json.load(open(sys.argv[2]))
assert sorted(got) == sorted(ref), (sorted(got), sorted(ref))
worst = 0.0
for k, t in ref.items():
    dtype, shape, values = got[k]
    assert dtype == str(t.dtype) and shape == list(t.shape), (k, dtype, shape, t.dtype, t.shape)
    worst = max([worst] + [abs(a - b) for a, b in zip(values, t.double().flatten().tolist())])
print(f"{len(ref)} tensors, max |d| {worst:.3g}")
sys.exit(0 if worst == 0.0 else 1)
PYEOF
for f in wd/model.pt consolidated.pt; do
  for py in "$PEERS" "$PY"; do
    v=$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null)
    if "$py" "$WORK/dump.py" "$WORK/$f" "$WORK/dump.json" >"$WORK/load" 2>&1; then
      ok "torch $v: torch.load($f) with its defaults: $(cat "$WORK/load")"
      if "$PEERS" "$WORK/compare.py" "$WORK/wd/model.safetensors" "$WORK/dump.json" >"$WORK/cmp" 2>&1; then
        ok "torch $v: $f equals model.safetensors ($(tail -1 "$WORK/cmp"))"
      else
        fail "torch $v: $f differs from model.safetensors"; sed 's/^/    | /' "$WORK/cmp"
      fi
    else
      fail "torch $v: torch.load($f) failed"; tail -5 "$WORK/load" | sed 's/^/    | /'
    fi
  done
done

# mtrain's own readers: the new model.pt as model.init (0 steps: the weights come back unchanged).
run_mtrain "$WORK/init" launch --master-port 0 "${small[@]}" --max-steps 0 \
  --set model.init="$WORK/wd/model.pt" --work-dir "$WORK/wd2"
expect_rc 0 "model.init = the new model.pt"
"$PEERS" - "$WORK/wd/model.safetensors" "$WORK/wd2/model.safetensors" <<'PYEOF' >"$WORK/cmp" 2>&1 &&
import sys
from safetensors.torch import load_file
a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
assert sorted(a) == sorted(b) and all(a[k].equal(b[k]) for k in a)
PYEOF
  ok "model.init of model.pt gives back the same weights" || { fail "model.init of model.pt"; cat "$WORK/cmp"; }
finish
