#!/usr/bin/env bash
# torchvision's resnet18 (10 classes), scripted: mtrain at world 1 ends with PyTorch's weights and
# BatchNorm buffers after 10 SGD steps; at world 2 under zero3 and fsdp the loss falls, and
# model.scripted.pt loads back with torch.jit.load with the buffers every rank agreed on
# (averaged over ranks at the end, see trainer.cpp average_buffers).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/port_retry.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_worker_torch
"$TORCH_PY" -c 'import torchvision' 2>/dev/null || skip "$TORCH_PY has no torchvision"
GOLDEN="$(dirname "$0")/torchscript_golden.py"
"$TORCH_PY" -W ignore "$GOLDEN" make-resnet "$WORK" || { fail "the Python reference"; finish; }
common=(--model torchscript --model-path "$WORK/net.pt" --data tensors --data-path "$WORK/data.pt"
  --set model.loss=cross_entropy --set data.shuffle=false --set data.val_fraction=0
  --set sched.name=constant --set optim.name=sgd --set train.log_interval=1 --set train.threads=1)

retry_port_clash "$WORK/out1" launch --nproc-per-node 1 --master-port 0 --strategy ddp --batch-size 6 \
  --work-dir "$WORK/w1" --max-steps 10 --set optim.lr=0.05 "${common[@]}"
expect_rc 0 "resnet18 world 1"
for f in model.pt model.scripted.pt; do
  msg=$("$TORCH_PY" -W ignore "$GOLDEN" compare "$WORK/ref_sgd.pt" "$WORK/w1/$f" 1e-5 2>&1) && ok "world 1 $f: $msg" || fail "world 1 $f: $msg"
done
msg=$("$TORCH_PY" -W ignore "$GOLDEN" compare "$WORK/ref_sgd.pt" "$WORK/w1/model.scripted.pt" 1e-5 --buffers 2>&1) \
  && ok "world 1 BatchNorm buffers: $msg" || fail "world 1 BatchNorm buffers: $msg"

# World 2: 30 steps (5 epochs of the 60 images) at a smaller rate, so that the fall of the loss
# stands out of the per-batch noise.
for strategy in zero3 fsdp; do
  [ "$strategy" = fsdp ] && extra=(--set fsdp.wrap_module_types=BasicBlock) || extra=(--set zero.stage3_param_persistence_threshold=0)
  retry_port_clash "$WORK/out2" launch --nproc-per-node 2 --master-port 0 --strategy "$strategy" --batch-size 3 \
    --work-dir "$WORK/w2$strategy" --max-steps 30 --set optim.lr=0.003 "${common[@]}" "${extra[@]}"
  expect_rc 0 "resnet18 world 2 $strategy"
  "$TORCH_PY" - "$WORK/w2$strategy" <<'PYEOF' && ok "$strategy: loss falls, buffers load back" || fail "$strategy outputs"
import json, sys, torch
wd = sys.argv[1]
rows = [json.loads(l) for l in open(f"{wd}/metrics.jsonl")]
losses = [r["loss"] for r in rows if r.get("mode") == "train"]
assert len(losses) == 30 and sum(losses[-10:]) / 10 < sum(losses[:10]) / 10 - 0.3, losses
m = torch.jit.load(f"{wd}/model.scripted.pt")
sd = m.state_dict()
assert int(sd["bn1.num_batches_tracked"]) == 30, sd["bn1.num_batches_tracked"]
assert all(torch.isfinite(v).all() for v in sd.values())
assert not torch.equal(sd["bn1.running_mean"], torch.zeros_like(sd["bn1.running_mean"]))
PYEOF
done
finish
