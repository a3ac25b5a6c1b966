#!/usr/bin/env bash
# A TorchScript file is a program (issue 29, item 1): a scripted __setstate__ that maps a file
# with aten::from_file(shared=True) — which creates the file while torch::jit::load runs — is
# refused by `mtrain launch` before any rank starts and by the worker alone before it loads the
# file: exit 2, one paragraph, and the file it would have created does not exist. With
# model.trust_code=true the user takes responsibility: the file's code runs (this one leaves its
# Linear unset, so LibTorch then refuses it in one paragraph of its own).
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_worker_torch
cat >"$WORK/make.py" <<'PYEOF'
import sys, torch, torch.nn as nn
from typing import Tuple
d = sys.argv[1]
class Evil(nn.Module):
    def __init__(s):
        super().__init__(); s.l = nn.Linear(4, 3); s.where = d + "/pwned"
    def forward(s, x):
        return s.l(x)
    @torch.jit.export
    def __getstate__(s) -> Tuple[torch.Tensor, bool, str]:
        return (s.l.weight, s.training, s.where)
    @torch.jit.export
    def __setstate__(s, state: Tuple[torch.Tensor, bool, str]):
        t = torch.from_file(state[2], shared=True, size=4)
        s.where = state[2]
        s.training = bool(state[1]) and t.numel() == 4
torch.jit.save(torch.jit.script(Evil()), f"{d}/evil.pt")
x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
torch.save({"input": x, "target": y}, f"{d}/data.pt")
PYEOF
"$TORCH_PY" -W ignore "$WORK/make.py" "$WORK" || { fail "making the hostile model"; finish; }
rm -f "$WORK/pwned"
common=(--max-steps 2 --batch-size 4 --model torchscript --model-path "$WORK/evil.pt" --data tensors
  --data-path "$WORK/data.pt" --set model.loss=cross_entropy --set train.threads=1)
run_mtrain "$WORK/out" launch --nproc-per-node 2 --master-port 0 --work-dir "$WORK/wd" "${common[@]}"
expect_rc 2 "mtrain launch refuses the hostile model"
expect_in "$WORK/out" "error: model.trust_code: the TorchScript model '$WORK/evil.pt' is a program that reaches outside the model"
expect_in "$WORK/out" "aten::from_file"
expect_in "$WORK/out" "nothing of it was run"
[ ! -e "$WORK/pwned" ] && ok "the file it maps was not created" || fail "$WORK/pwned exists: the model's code ran"
[ ! -e "$WORK/wd" ] && ok "no rank started" || fail "a work dir was made"

(cd "$WORK" && timeout -k 5 60 "$MTRAIN_BIN_DIR/mtrain-worker" --set model.name=torchscript --set model.path="$WORK/evil.pt" \
  --set data.name=tensors --set data.path="$WORK/data.pt" --set model.loss=cross_entropy --set train.max_steps=1 \
  --set train.work_dir="$WORK/wd-worker") >"$WORK/wout" 2>&1
rc=$?
expect_rc 2 "the worker alone refuses it before torch::jit::load"
expect_in "$WORK/wout" "aten::from_file"
[ ! -e "$WORK/pwned" ] && ok "still not created" || fail "$WORK/pwned exists after the worker"

run_mtrain "$WORK/out2" launch --nproc-per-node 1 --master-port 0 --work-dir "$WORK/wd-trusted" "${common[@]}" \
  --set model.trust_code=true
expect_not_in "$WORK/out2" "reaches outside the model"
[ -e "$WORK/pwned" ] && ok "trusted: its __setstate__ ran (the file exists)" || fail "trusted run did not load the file's code"
finish
