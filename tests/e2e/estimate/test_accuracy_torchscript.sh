#!/usr/bin/env bash
# Estimate vs measured peak per rank (accuracy.sh): two TorchScript models (make_models.py: a
# GPT-style transformer of 6 Blocks, Ψ 21.0M; a ResNet-style net with BatchNorm, Ψ 10.6M), every
# strategy; the blocks are the units (fsdp.wrap_module_types). Worlds 1-2 in the suite
# (test_accuracy_gpt.sh says why); WORLDS="1 2 3 4" runs the full sweep (docs/estimate-accuracy.md).
. "$(dirname "$0")/../lib.sh"
WORLDS=${WORLDS:-"1 2"}  # before accuracy.sh, whose default is 1-4
. "$(dirname "$0")/accuracy.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_worker_torch
"$TORCH_PY" "$(dirname "$0")/make_models.py" lm "$WORK" && "$TORCH_PY" "$(dirname "$0")/make_models.py" conv "$WORK" ||
  { fail "making the TorchScript models"; finish; }
common=(--model torchscript --data tensors --set data.val_fraction=0 --set train.threads=1)
accuracy_model ts-lm 2 "${common[@]}" --model-path "$WORK/lm.pt" --data-path "$WORK/lm_data.pt" \
  --set model.loss=lm_cross_entropy --set fsdp.wrap_module_types=Block --batch-size 8
accuracy_model ts-conv 2 "${common[@]}" --model-path "$WORK/conv.pt" --data-path "$WORK/conv_data.pt" \
  --set model.loss=cross_entropy --set fsdp.wrap_module_types=ResBlock --batch-size 8
finish
