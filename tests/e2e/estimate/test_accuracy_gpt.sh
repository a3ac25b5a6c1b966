#!/usr/bin/env bash
# Not yet a CTest test (issue 31 left open): the estimate has not been calibrated against these
# runs; run by hand with MTRAIN_BIN_DIR set, as the next step of the issue.
# Estimate vs measured peak per rank (accuracy.sh): the built-in gpt, Ψ 19.3M, worlds 1-4, every strategy.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/accuracy.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
accuracy_model gpt 2 --model gpt --set model.n_layer=6 --set model.n_embd=512 --set model.n_head=8 \
  --set model.block_size=64 --batch-size 4 --set train.threads=1
finish
