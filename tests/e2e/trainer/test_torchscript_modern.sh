#!/usr/bin/env bash
# Models scripted by PyTorch 2.x, trained by the worker built on the same PyTorch (issue 27): a
# nanoGPT-style transformer whose attention is F.scaled_dot_product_attention, the same with
# nn.MultiheadAttention, and torchvision's VisionTransformer. Plain PyTorch 2.x trains each 10
# steps (global batch 6, rows in file order); mtrain trains the same file under ddp, zero3 and
# fsdp at worlds 1-3 and must end with PyTorch's weights: SGD within 1e-6, AdamW (lr 1e-3) within
# 1e-4 — also with activation checkpointing of the blocks. One documented exception: the key third
# of nn.MultiheadAttention's packed input bias has a true gradient of exactly 0 (softmax ignores a
# constant added to every score), so PyTorch and mtrain both hold rounding noise there (1e-9),
# which AdamW normalises into steps of up to lr: with AdamW that slice is held to lr·steps/10
# (1e-3 at lr 1e-3, 10 steps) and reported apart; everything else to 1e-4. SGD: all to 1e-6. The 1.13 line has its own test
# (test_torchscript_refused.sh: the same files are refused before any rank starts).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/port_retry.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_worker_torch
"$TORCH_PY" -c 'import sys, torch; sys.exit(int(torch.__version__.split(".")[0]) < 2)' \
  || skip "the worker's PyTorch ($TORCH_PY) is 1.x; this test is for the 2.x line (-DMTRAIN_TORCH=python)"
"$TORCH_PY" -c 'import torchvision' 2>/dev/null || skip "$TORCH_PY has no torchvision"
GOLDEN="$(dirname "$0")/torchscript_golden.py"
for kind in sdpa mha vit; do
  mkdir -p "$WORK/$kind"
  "$TORCH_PY" -W ignore "$GOLDEN" "make-$kind" "$WORK/$kind" || { fail "the Python reference for $kind"; finish; }
done

# train KIND OPT STRATEGY WORLD [EXTRA...]: 10 steps, compared with PyTorch's weights.
train() {
  local kind=$1 opt=$2 strategy=$3 world=$4; shift 4
  local lr tol block loss=()
  local cmp=()
  if [ "$opt" = sgd ]; then lr=0.1; tol=1e-6; else lr=1e-3; tol=1e-4; cmp=(--key-bias-tol=1e-3); fi
  if [ "$kind" = vit ]; then block=EncoderBlock; loss=(--set model.loss=cross_entropy); else block=Block; fi
  local extra=()
  [ "$strategy" = zero3 ] && extra=(--set zero.stage3_param_persistence_threshold=0)
  [ "$strategy" = fsdp ] && extra=(--set fsdp.wrap_module_types="$block")
  local wd="$WORK/wd-$kind-$opt-$strategy-$world${1:+-ckpt}"
  retry_port_clash "$WORK/out" launch --nproc-per-node "$world" --master-port 0 --strategy "$strategy" \
    --max-steps 10 --batch-size $((6 / world)) --work-dir "$wd" --model torchscript \
    --model-path "$WORK/$kind/net.pt" --data tensors --data-path "$WORK/$kind/data.pt" "${loss[@]}" \
    --set data.shuffle=false --set data.val_fraction=0 --set sched.name=constant --set optim.name="$opt" \
    --set optim.lr="$lr" --set optim.weight_decay=0 --set train.threads=1 --set train.log_interval=5 \
    "${extra[@]}" "$@"
  local what="$kind $opt $strategy world $world${1:+ (activation checkpointing)}"
  if [ "$rc" -ne 0 ]; then
    fail "$what: exit $rc"; sed 's/^/    | /' "$WORK/out" | tail -20; return
  fi
  if msg=$("$TORCH_PY" -W ignore "$GOLDEN" compare "$WORK/$kind/ref_$opt.pt" "$wd/model.scripted.pt" "$tol" "${cmp[@]}" 2>&1); then
    ok "$what: $msg"
  else
    fail "$what: $msg"
  fi
}

# Every strategy at every world for the SDPA model with SGD; each model under ddp x1, fsdp x2,
# zero3 x3 with both optimisers.
for world in 1 2 3; do for strategy in ddp zero3 fsdp; do train sdpa sgd "$strategy" "$world"; done; done
for kind in sdpa mha vit; do
  for opt in sgd adamw; do
    [ "$kind/$opt" = sdpa/sgd ] && continue
    train "$kind" "$opt" ddp 1
    train "$kind" "$opt" fsdp 2
    train "$kind" "$opt" zero3 3
  done
done
# Activation checkpointing recomputes each block in backward: the same weights.
train sdpa sgd fsdp 2 --set fsdp.activation_checkpointing=true
train vit adamw fsdp 2 --set fsdp.activation_checkpointing=true
train mha sgd zero3 3 --set fsdp.activation_checkpointing=true --set fsdp.wrap_module_types=Block
finish
