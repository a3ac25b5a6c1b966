#!/usr/bin/env bash
# Estimate vs measured peak per rank (accuracy.sh): the built-in gpt, Ψ 19.3M (77 MB fp32),
# every strategy. ESTIMATE_TABLE=rows.tsv collects the rows for docs/estimate-accuracy.md.
# Worlds 1-2 in the suite, like the mlp and TorchScript tests: the three tests at worlds 1-4 (112
# runs) take about half an hour here, beyond CI's budget for them; WORLDS="1 2 3 4" runs the full
# sweep (docs/estimate-accuracy.md is made from it; every row there is within 10%).
. "$(dirname "$0")/../lib.sh"
WORLDS=${WORLDS:-"1 2"}  # before accuracy.sh, whose default is 1-4
. "$(dirname "$0")/accuracy.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
accuracy_model gpt 2 --model gpt --set model.n_layer=6 --set model.n_embd=512 \
  --set model.n_head=8 --set model.block_size=64 --batch-size 4 --set train.threads=1
finish
