#!/usr/bin/env bash
# Not yet a CTest test (issue 31 left open): the estimate has not been calibrated against these
# runs; run by hand with MTRAIN_BIN_DIR set, as the next step of the issue.
# Estimate vs measured peak per rank (accuracy.sh): two TorchScript models (make_models.py: a
# GPT-style transformer of 4 Blocks, Ψ 7.5M; a ResNet-style net with BatchNorm), worlds 1-4,
# every strategy; the blocks are the units (fsdp.wrap_module_types).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/accuracy.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_torch
"$PY" "$(dirname "$0")/make_models.py" lm "$WORK" && "$PY" "$(dirname "$0")/make_models.py" conv "$WORK" ||
  { fail "making the TorchScript models"; finish; }
common=(--model torchscript --data tensors --set data.val_fraction=0 --set train.threads=1)
accuracy_model ts-lm 2 "${common[@]}" --model-path "$WORK/lm.pt" --data-path "$WORK/lm_data.pt" \
  --set model.loss=lm_cross_entropy --set fsdp.wrap_module_types=Block --batch-size 8
accuracy_model ts-conv 2 "${common[@]}" --model-path "$WORK/conv.pt" --data-path "$WORK/conv_data.pt" \
  --set model.loss=cross_entropy --set fsdp.wrap_module_types=ResBlock --batch-size 8
finish
