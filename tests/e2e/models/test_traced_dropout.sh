#!/usr/bin/env bash
# Traced modules with dropout (issue 44 item 1). With p = 0 a dropout is the identity in both
# modes, so the mode the trace froze is harmless: traced in train mode and in eval mode alike, it
# trains and validates. With p = 0.1 one trace cannot do both phases: alone it is refused with one
# paragraph naming model.eval_path and how to make the pair, exit 2, by the launcher before any
# rank starts (so are a pair that does not match and an eval file traced in train mode); the pair
# — model.path traced after model.train(), model.eval_path after model.eval(), of one model
# object — trains with dropout and validates without it, on one set of weights: the validation
# loss mtrain logs equals PyTorch's eval-mode loss of the model.pt it writes. A BatchNorm pair under
# ddp x2 too: validation reads the running statistics training updated (and averaged over ranks),
# as PyTorch's eval-mode trace loaded with model.scripted.pt's state (docs/your-model.md's recipe).
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
    def __init__(self, p, hidden=8):
        super().__init__()
        self.fc = nn.Linear(4, hidden)
        self.drop = nn.Dropout(p)
        self.head = nn.Linear(hidden, 3)
    def forward(self, x):
        return self.head(self.drop(torch.relu(self.fc(x))))
ex = torch.randn(4, 4)
torch.manual_seed(0)
torch.jit.save(torch.jit.trace(Net(0.0), ex), f"{d}/p0_train.pt")
torch.jit.save(torch.jit.trace(Net(0.0).eval(), ex), f"{d}/p0_eval.pt")
net = Net(0.1)  # the pair: one model object, traced in each mode
torch.jit.save(torch.jit.trace(net.train(), ex, check_trace=False), f"{d}/p01.pt")
torch.jit.save(torch.jit.trace(net.eval(), ex), f"{d}/p01_eval.pt")
torch.jit.save(torch.jit.trace(Net(0.1, hidden=16).eval(), ex), f"{d}/other_eval.pt")
class WithBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8)
        self.bn = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 3)
    def forward(self, x):
        return self.head(self.bn(torch.relu(self.fc(x))))
bn = WithBN()
torch.jit.save(torch.jit.trace(bn.train(), ex), f"{d}/bn.pt")
torch.jit.save(torch.jit.trace(bn.eval(), ex), f"{d}/bn_eval.pt")
x, y = torch.randn(64, 4), torch.randint(0, 3, (64,))
torch.save({"input": x, "target": y}, f"{d}/data.pt")
torch.save({"input": torch.randn(32, 4), "target": torch.randint(0, 3, (32,))}, f"{d}/val.pt")
PYEOF
cat >"$WORK/check.py" <<'PYEOF'
# PyTorch's eval-mode loss of mtrain's weights on the validation file vs the last val loss logged.
# WEIGHTS: model.pt (a plain dict, weights_only), or model.scripted.pt, whose state has the buffers.
import glob, json, sys, torch
import torch.nn.functional as F
d, wd, eval_file, weights = sys.argv[1:5]
m = torch.jit.load(f"{d}/{eval_file}")
w = f"{wd}/{weights}"
m.load_state_dict(torch.load(w) if weights == "model.pt" else torch.jit.load(w).state_dict())
m.eval()
val = torch.load(f"{d}/val.pt")
with torch.no_grad():
    want = F.cross_entropy(m(val["input"]), val["target"]).item()
rows = [json.loads(l) for f in glob.glob(f"{wd}/**/metrics.jsonl", recursive=True) for l in open(f)]
got = [r["loss"] for r in rows if r["mode"] == "val"][-1]
start = torch.jit.load(f"{d}/{eval_file}").state_dict()
moved = max((start[k] - v).abs().max().item() for k, v in torch.load(f"{wd}/model.pt").items())
print(f"val loss {got:.8f} vs PyTorch eval-mode {want:.8f}: |d| {abs(got - want):.2e}; weights moved {moved:.2e}")
sys.exit(0 if abs(got - want) <= 1e-6 and moved > 1e-3 else 1)
PYEOF
"$TORCH_PY" "$WORK/make.py" "$WORK" || { fail "making the traced modules"; finish; }

train() {  # NAME MODEL ARGS...: output in $WORK/out; NPROC ranks (default 1)
  local name=$1 model=$2; shift 2
  retry_port_clash "$WORK/out" launch --nproc-per-node "${NPROC:-1}" --master-port 0 --max-steps 4 --batch-size 4 \
    --model torchscript --model-path "$WORK/$model" --data tensors --data-path "$WORK/data.pt" \
    --set model.loss=cross_entropy --set train.val_interval=2 --work-dir "$WORK/wd-$name" \
    --set train.threads=1 "$@"
}
# Refused by the launcher (mtrain-worker model-check), before any rank starts: no rank's words,
# no run folder (issue 44 item 1: the ranks never find it first).
refused_before_ranks() {  # NAME
  expect_not_in "$WORK/out" "[rank"
  [ ! -e "$WORK/wd-$1" ] && ok "$1: no rank started (no work dir)" || fail "$1: a rank started: $(ls -R "$WORK/wd-$1")"
}

for m in p0_train p0_eval; do
  train "$m" "$m.pt"
  expect_rc 0 "a module traced in ${m#p0_} mode with nn.Dropout(0.0) trains"
  [ -s "$WORK/wd-$m/model.pt" ] && ok "$m: model.pt written" || fail "$m: no model.pt"
done

train p01 p01.pt
expect_rc 2 "a traced nn.Dropout(0.1) without its eval-mode trace is refused"
expect_in "$WORK/out" "'$WORK/p01.pt' was made by torch.jit.trace"
expect_in "$WORK/out" "aten::dropout (training=true)"
expect_in "$WORK/out" "model.eval_path (the eval-mode trace to validate with) is not set"
expect_in "$WORK/out" "torch.jit.trace(model.eval(), example)"
expect_in "$WORK/out" "a dropout with p = 0 is the identity"
refused_before_ranks p01

train mismatch p01.pt --set model.eval_path="$WORK/other_eval.pt"
expect_rc 2 "an eval trace of another module is refused"
expect_in "$WORK/out" "is not a trace of the module in model.path '$WORK/p01.pt': 'fc.weight' is float32 [8x4] in model.path and float32 [16x4] in model.eval_path"
refused_before_ranks mismatch

train train_as_eval p01.pt --set model.eval_path="$WORK/p01.pt"
expect_rc 2 "a train-mode trace as model.eval_path is refused"
expect_in "$WORK/out" "model.eval_path '$WORK/p01.pt' was traced in train mode"
refused_before_ranks train_as_eval

train pair p01.pt --set model.eval_path="$WORK/p01_eval.pt" --set data.val_path="$WORK/val.pt"
expect_rc 0 "the pair (train-mode and eval-mode traces of one nn.Dropout(0.1) module) trains"
if msg=$("$TORCH_PY" -W ignore "$WORK/check.py" "$WORK" "$WORK/wd-pair" p01_eval.pt model.pt 2>&1); then
  ok "pair: $msg"
else
  fail "pair: $msg"
fi

NPROC=2 train bn bn.pt --set model.eval_path="$WORK/bn_eval.pt" --set data.val_path="$WORK/val.pt"
expect_rc 0 "a BatchNorm pair trains under ddp x2"
if msg=$("$TORCH_PY" -W ignore "$WORK/check.py" "$WORK" "$WORK/wd-bn" bn_eval.pt model.scripted.pt 2>&1); then
  ok "BatchNorm pair: $msg"
else
  fail "BatchNorm pair: $msg"
fi
finish
