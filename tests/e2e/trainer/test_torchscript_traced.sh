#!/usr/bin/env bash
# Modules made by torch.jit.trace (lib/trainer/model/traced_module.cpp): one whose dropout and
# BatchNorm had their mode frozen by the trace is refused with one paragraph naming the file and
# the fix (script it), exit 2 and nothing in the work dir; a traced module whose shapes were
# frozen fails on another batch size with the same fix named; a traced module without either
# trains like a scripted one.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/port_retry.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_torch
cat >"$WORK/make.py" <<'PYEOF'
import sys, warnings, torch
import torch.nn as nn
warnings.simplefilter("ignore")
d = sys.argv[1]
class WithBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8)
        self.bn = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(8, 3)
    def forward(self, x):
        return self.head(self.drop(self.bn(self.fc(x))))
class FixedShape(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
    def forward(self, x):
        return self.fc(x).reshape(x.shape[0] * 1, 3).reshape(8, 3)  # the trace keeps 8
class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
    def forward(self, x):
        return self.fc(torch.relu(x))
ex = torch.randn(8, 4)
torch.jit.save(torch.jit.trace(WithBN(), ex), f"{d}/traced_bn.pt")
torch.jit.save(torch.jit.script(WithBN()), f"{d}/scripted_bn.pt")
torch.jit.save(torch.jit.trace(FixedShape(), ex), f"{d}/traced_shape.pt")
torch.jit.save(torch.jit.trace(Plain(), ex), f"{d}/traced_plain.pt")
x, y = torch.randn(64, 4), torch.randint(0, 3, (64,))
torch.save({"input": x, "target": y}, f"{d}/data.pt")
PYEOF
"$PY" "$WORK/make.py" "$WORK" || { fail "making the traced modules"; finish; }

train() {  # NAME MODEL ARGS...: a 2-rank run of MODEL, output in $WORK/out
  local name=$1 model=$2; shift 2
  retry_port_clash "$WORK/out" launch --nproc-per-node 2 --master-port 0 --max-steps 2 --batch-size 4 \
    --model torchscript --model-path "$WORK/$model" --data tensors --data-path "$WORK/data.pt" \
    --set model.loss=cross_entropy --work-dir "$WORK/wd-$name" --set train.threads=1 "$@"
}

train bn traced_bn.pt
expect_rc 2 "a traced module with BatchNorm and dropout is refused"
expect_in "$WORK/out" "'$WORK/traced_bn.pt' was made by torch.jit.trace"
expect_in "$WORK/out" "aten::batch_norm (training=true)"
expect_in "$WORK/out" "torch.jit.script(model)"
[ ! -e "$WORK/wd-bn/model.pt" ] && ok "bn: no model.pt" || fail "bn: $(ls -R "$WORK/wd-bn")"

train shape traced_shape.pt
expect_rc 2 "a traced module with a frozen shape fails on another batch size"
expect_in "$WORK/out" "'$WORK/traced_shape.pt' was made by torch.jit.trace, which froze the example input's shapes"

train plain traced_plain.pt
expect_rc 0 "a traced module without frozen modes or shapes trains"
train scripted scripted_bn.pt
expect_rc 0 "the same module with BatchNorm, scripted, trains"
finish
