#!/usr/bin/env bash
# Not yet a CTest test (issue 31 left open): the estimate has not been calibrated against these
# runs; run by hand with MTRAIN_BIN_DIR set, as the next step of the issue.
# Estimate vs measured peak per rank (accuracy.sh): the built-in mlp, Ψ 6.3M, worlds 1-4, every strategy.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/accuracy.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
accuracy_model mlp 2 --model mlp --set model.hidden=1024 --set model.depth=7 --set model.input_dim=256 \
  --batch-size 32 --set train.threads=1
finish
