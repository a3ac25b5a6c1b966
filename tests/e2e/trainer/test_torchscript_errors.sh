#!/usr/bin/env bash
# Bad TorchScript models and tensors files: the launcher refuses what it can see (missing files,
# activation checkpointing) with exit 2 before any rank starts; what only the worker can see (a
# frozen module, a forward that is not (Tensor) -> Tensor, no loss, an OrderedDict data file)
# gets one paragraph from rank 0 and exit 2; nothing is written into the work dir either way.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/port_retry.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_torch
# From a file: torch.jit.script reads the classes' source code.
cat >"$WORK/make.py" <<'PYEOF'
import collections, sys, torch
import torch.nn as nn
d = sys.argv[1]
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
    def forward(self, x):
        return self.fc(x)
class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
    def forward(self, x, y):
        return self.fc(x) + y
torch.jit.save(torch.jit.script(Net()), f"{d}/net.pt")
torch.jit.save(torch.jit.freeze(torch.jit.script(Net()).eval()), f"{d}/frozen.pt")
torch.jit.save(torch.jit.script(Two()), f"{d}/two.pt")
torch.save(Net().state_dict(), f"{d}/state_dict.pt")
x, y = torch.randn(32, 4), torch.randint(0, 3, (32,))
torch.save({"input": x, "target": y}, f"{d}/data.pt")
torch.save(collections.OrderedDict(input=x, target=y), f"{d}/ordered.pt")
PYEOF
"$PY" "$WORK/make.py" "$WORK" || { fail "making the bad inputs"; finish; }

# try NAME EXPECTED_TEXT ARGS...: exit 2, the text in the output, no work dir.
try() {
  local name=$1 text=$2; shift 2
  retry_port_clash "$WORK/out" launch --nproc-per-node 2 --master-port 0 --max-steps 2 --batch-size 4 \
    --model torchscript --data tensors --work-dir "$WORK/wd-$name" --set train.threads=1 "$@"
  expect_rc 2 "$name"
  expect_in "$WORK/out" "$text"
  [ ! -e "$WORK/wd-$name" ] && ok "$name: no work dir" || fail "$name: $(ls -R "$WORK/wd-$name")"
}
try missing-model "model.path '$WORK/none.pt' does not exist" --model-path "$WORK/none.pt" --data-path "$WORK/data.pt"
try missing-data "data.path '$WORK/none.pt' does not exist" --model-path "$WORK/net.pt" --data-path "$WORK/none.pt"
try checkpointing "activation_checkpointing is on but the torchscript model has no blocks to recompute" --model-path "$WORK/net.pt" \
  --data-path "$WORK/data.pt" --set model.loss=cross_entropy --set fsdp.activation_checkpointing=true
try state-dict "is not a TorchScript archive" --model-path "$WORK/state_dict.pt" --data-path "$WORK/data.pt"
try frozen "has no parameters" --model-path "$WORK/frozen.pt" --data-path "$WORK/data.pt" --set model.loss=cross_entropy
try two-inputs "the trainer needs forward(self, x: Tensor) -> Tensor" --model-path "$WORK/two.pt" --data-path "$WORK/data.pt" \
  --set model.loss=cross_entropy
try no-loss "no loss(input, target) method and model.loss is auto" --model-path "$WORK/net.pt" --data-path "$WORK/data.pt"
# An OrderedDict of the two tensors reads like a dict (the checked pickle reader, issue 29).
retry_port_clash "$WORK/out" launch --nproc-per-node 2 --master-port 0 --max-steps 2 --batch-size 4 --model torchscript \
  --model-path "$WORK/net.pt" --data tensors --data-path "$WORK/ordered.pt" --set model.loss=cross_entropy \
  --work-dir "$WORK/wd-ordered" --set train.threads=1
expect_rc 0 "an OrderedDict tensors file trains"
# And the good file trains.
retry_port_clash "$WORK/out" launch --nproc-per-node 2 --master-port 0 --max-steps 2 --batch-size 4 --model torchscript \
  --model-path "$WORK/net.pt" --data tensors --data-path "$WORK/data.pt" --set model.loss=cross_entropy \
  --work-dir "$WORK/wd-good" --set train.threads=1
expect_rc 0 "the good module trains"
finish
