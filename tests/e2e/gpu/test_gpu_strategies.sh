#!/usr/bin/env bash
# [gpu] The bundled trainer on CUDA with NCCL: every strategy in fp32 and bf16 on this node's
# GPUs (one rank per GPU, at most 4) trains a small gpt whose loss falls, and the worker says it
# ran on nccl. Skips with the reason on machines without a GPU or with a CPU-only worker.
# On a GPU machine: build with -DMTRAIN_WITH_CUDA=ON against the machine's CUDA LibTorch
# (docs/gpu.md), then `ctest -R e2e.gpu`.
. "$(dirname "$0")/../lib.sh"
worker=${MTRAIN_BIN_DIR}/mtrain-worker
[ -x "$worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
info=$("$worker" build-info 2>/dev/null) || skip "mtrain-worker build-info failed"
read -r compiled devices < <("$PY" -c 'import json,sys; c=json.load(sys.stdin)["cuda"]; print(int(c["compiled"]), c["devices"] or 0)' <<<"$info")
[ "$compiled" = 1 ] || skip "mtrain-worker was built without CUDA (configure with -DMTRAIN_WITH_CUDA=ON against a CUDA LibTorch; see docs/gpu.md)"
[ "$devices" -ge 1 ] || skip "no CUDA device is visible (nvidia-smi, CUDA_VISIBLE_DEVICES)"
n=$(( devices > 4 ? 4 : devices ))
for s in ddp zero1 zero2 zero3 fsdp; do
  for p in fp32 bf16; do
    wd=$WORK/wd_${s}_$p
    run_mtrain "$WORK/out_${s}_$p" launch --nproc-per-node "$n" --device gpu --strategy "$s" --precision "$p" \
      --max-steps 60 --master-port auto --set model.n_layer=2 --set model.n_embd=128 --set model.n_head=4 \
      --set train.batch_size=8 --set train.threads=1 --work-dir "$wd"
    expect_rc 0 "$s $p on $n GPU(s)"
    expect_in "$WORK/out_${s}_$p" "on world $n (nccl)"
    "$PY" - "$wd" <<'PYEOF' && ok "$s $p: the loss falls" || fail "$s $p: the loss does not fall"
import json, os, sys
rows = [json.loads(l) for l in open(os.path.join(sys.argv[1], "metrics.jsonl"))]
losses = [r["loss"] for r in rows if "loss" in r and r.get("mode", "train") == "train"]
assert len(losses) >= 2 and losses[-1] < losses[0] - 0.5, losses
PYEOF
  done
done
finish
