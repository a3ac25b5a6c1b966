#!/usr/bin/env bash
# A traced module whose dropouts all have p = 0 trains (issue 44 item 1): aten::dropout(x, 0.0,
# training) is the identity in both modes, so the mode the trace froze is harmless — traced in
# train mode and in eval mode alike, it trains and validates. With p = 0.1 (and with BatchNorm) the
# trace is still refused with one paragraph, exit 2, by the launcher before any rank starts.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../trainer/port_retry.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_worker_torch
cat >"$WORK/make.py" <<'PYEOF'
import sys, warnings, torch
import torch.nn as nn
warnings.simplefilter("ignore")
d = sys.argv[1]
class Net(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.fc = nn.Linear(4, 8)
        self.drop = nn.Dropout(p)
        self.head = nn.Linear(8, 3)
    def forward(self, x):
        return self.head(self.drop(torch.relu(self.fc(x))))
ex = torch.randn(4, 4)
torch.manual_seed(0)
torch.jit.save(torch.jit.trace(Net(0.0), ex), f"{d}/p0_train.pt")
torch.jit.save(torch.jit.trace(Net(0.0).eval(), ex), f"{d}/p0_eval.pt")
torch.jit.save(torch.jit.trace(Net(0.1), ex), f"{d}/p01.pt")
x, y = torch.randn(64, 4), torch.randint(0, 3, (64,))
torch.save({"input": x, "target": y}, f"{d}/data.pt")
PYEOF
"$TORCH_PY" "$WORK/make.py" "$WORK" || { fail "making the traced modules"; finish; }

train() {  # NAME MODEL ARGS...: output in $WORK/out
  local name=$1 model=$2; shift 2
  retry_port_clash "$WORK/out" launch --nproc-per-node 1 --master-port 0 --max-steps 4 --batch-size 4 \
    --model torchscript --model-path "$WORK/$model" --data tensors --data-path "$WORK/data.pt" \
    --set model.loss=cross_entropy --set train.val_interval=2 --work-dir "$WORK/wd-$name" \
    --set train.threads=1 "$@"
}

for m in p0_train p0_eval; do
  train "$m" "$m.pt"
  expect_rc 0 "a module traced in ${m#p0_} mode with nn.Dropout(0.0) trains"
  [ -s "$WORK/wd-$m/model.pt" ] && ok "$m: model.pt written" || fail "$m: no model.pt"
done
train p01 p01.pt
expect_rc 2 "a traced nn.Dropout(0.1) is still refused"
expect_in "$WORK/out" "'$WORK/p01.pt' was made by torch.jit.trace"
expect_in "$WORK/out" "aten::dropout (training=true)"
expect_in "$WORK/out" "a dropout with p = 0 is the identity"
[ ! -e "$WORK/wd-p01/model.pt" ] && ok "p01: no model.pt" || fail "p01: $(ls -R "$WORK/wd-p01")"
# The launcher refuses it (mtrain-worker model-check), before any rank starts: no rank's words, no
# run folder (issue 44 item 1: the ranks never find it first).
expect_not_in "$WORK/out" "[rank"
[ ! -e "$WORK/wd-p01" ] && ok "p01: no rank started (no work dir)" || fail "p01: a rank started: $(ls -R "$WORK/wd-p01")"
finish
