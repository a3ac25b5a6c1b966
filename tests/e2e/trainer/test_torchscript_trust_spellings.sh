#!/usr/bin/env bash
# The trust check parses, it does not scan text (issue 40 items 1 and 3). A real archive written
# by torch.jit.save has its __setstate__ rewritten the ways that passed the old text scan — a space
# before the call's parenthesis, the call split over lines, the code record renamed to `.PY`
# (LibTorch finds records case-insensitively), `def __setstate__ (` — and each must be refused by
# `mtrain launch` before any rank starts, by the worker alone before torch::jit::load, and on the
# 1.13 line where it is built; the file its __setstate__ maps must never appear. With
# model.trust_code the same file does run: the rewrite is real code LibTorch executes.
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_worker_torch
cat >"$WORK/make.py" <<'PYEOF'
import re, sys, torch, torch.nn as nn, zipfile
from typing import Tuple
d, variant = sys.argv[1], sys.argv[2]
class Evil(nn.Module):
    def __init__(s):
        super().__init__(); s.l = nn.Linear(4, 3); s.where = d + "/pwned"
    def forward(s, x):
        return s.l(x)
    @torch.jit.export
    def __getstate__(s) -> Tuple[torch.Tensor, torch.Tensor, bool, str]:
        return (s.l.weight, s.l.bias, s.training, s.where)
    @torch.jit.export
    def __setstate__(s, state: Tuple[torch.Tensor, torch.Tensor, bool, str]):
        t = torch.from_file(state[3], shared=True, size=4)
        s.where = state[3]
        s.training = state[2] and t.numel() == 4
src = f"{d}/clean.pt"
torch.jit.save(torch.jit.script(Evil()), src)
out = f"{d}/evil-{variant}.pt"
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w") as zout:
    for info in zin.infolist():
        data, name = zin.read(info.filename), info.filename
        if name.endswith("code/__torch__.py"):
            code = data.decode()
            assert "torch.from_file(" in code, code
            if variant == "space":
                code = code.replace("torch.from_file(", "torch.from_file (")
            elif variant == "lines":
                code = code.replace("torch.from_file(", "torch.from_file(\n      ")
            elif variant == "dots":
                code = code.replace("torch.from_file(", "torch . from_file(")
            elif variant == "upper":
                name = name[: -len(".py")] + ".PY"
            elif variant == "defspace":
                code = code.replace("def __setstate__(", "def __setstate__ (").replace("torch.from_file(", "torch.from_file (")
            data = code.encode()
        zout.writestr(name, data)
x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
torch.save({"input": x, "target": y}, f"{d}/data.pt")
PYEOF
variants="space lines dots upper defspace"
for v in $variants; do
  "$TORCH_PY" -W ignore "$WORK/make.py" "$WORK" "$v" || { fail "making the hostile model ($v)"; finish; }
done
common=(--max-steps 2 --batch-size 4 --model torchscript --data tensors --data-path "$WORK/data.pt"
  --set model.loss=cross_entropy --set train.threads=1)
for v in $variants; do
  rm -f "$WORK/pwned"
  run_mtrain "$WORK/out-$v" launch --nproc-per-node 2 --master-port 0 --work-dir "$WORK/wd-$v" \
    --model-path "$WORK/evil-$v.pt" "${common[@]}"
  expect_rc 2 "launch refuses the $v spelling"
  expect_in "$WORK/out-$v" "is a program that reaches outside the model"
  expect_in "$WORK/out-$v" "aten::from_file"
  [ ! -e "$WORK/pwned" ] && ok "$v: the file it maps was not created" || fail "$v: $WORK/pwned exists: the model's code ran"
  [ ! -e "$WORK/wd-$v" ] && ok "$v: no rank started" || fail "$v: a work dir was made"

  (cd "$WORK" && timeout -k 5 120 "$MTRAIN_BIN_DIR/mtrain-worker" --set model.name=torchscript \
    --set model.path="$WORK/evil-$v.pt" --set data.name=tensors --set data.path="$WORK/data.pt" \
    --set model.loss=cross_entropy --set train.max_steps=1 --set train.work_dir="$WORK/wdw-$v") >"$WORK/wout-$v" 2>&1
  rc=$?
  expect_rc 2 "the worker alone refuses the $v spelling before torch::jit::load"
  [ ! -e "$WORK/pwned" ] && ok "$v: still not created" || fail "$v: $WORK/pwned exists after the worker"
  if [ -x "${MTRAIN_113_BIN_DIR:-}/mtrain-worker" ]; then
    timeout -k 5 120 "$MTRAIN_113_BIN_DIR/mtrain-worker" model-check "$WORK/evil-$v.pt" >"$WORK/w113-$v" 2>&1
    if grep -q "aten::from_file" "$WORK/w113-$v"; then ok "$v: the 1.13 worker finds it too"; else
      fail "$v: the 1.13 worker's model-check missed it: $(head -c 400 "$WORK/w113-$v")"; fi
  fi
done

rm -f "$WORK/pwned"
run_mtrain "$WORK/out-trusted" launch --nproc-per-node 1 --master-port 0 --work-dir "$WORK/wd-trusted" \
  --model-path "$WORK/evil-space.pt" "${common[@]}" --set model.trust_code=true
expect_not_in "$WORK/out-trusted" "reaches outside the model"
[ -e "$WORK/pwned" ] && ok "trusted: LibTorch ran the rewritten __setstate__ (the file exists)" ||
  fail "trusted run did not run the rewritten code: the test's rewrite proves nothing"
finish
