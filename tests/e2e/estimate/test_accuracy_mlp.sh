#!/usr/bin/env bash
# Estimate vs measured peak per rank (accuracy.sh): the built-in mlp, Ψ 13.1M (52 MB fp32; each of
# its 5 layers an FSDP unit), every strategy. Worlds 1-2 in the suite (test_accuracy_gpt.sh says
# why); WORLDS="1 2 3 4" runs the full sweep (docs/estimate-accuracy.md).
. "$(dirname "$0")/../lib.sh"
WORLDS=${WORLDS:-"1 2"}  # before accuracy.sh, whose default is 1-4
. "$(dirname "$0")/accuracy.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
accuracy_model mlp 2 --model mlp --set model.hidden=2048 --set model.depth=5 \
  --set model.input_dim=256 --batch-size 32 --set train.threads=1
finish
