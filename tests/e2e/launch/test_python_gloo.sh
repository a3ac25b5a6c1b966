#!/usr/bin/env bash
# (a) A Python torch peer started by mtrain sees the torchrun environment and all-reduces.
. "$(dirname "$0")/../lib.sh"
need_torch
here=$(dirname "$0")
for n in 2 3; do
  run_mtrain "$WORK/out$n" launch --nproc-per-node $n --role trainer --rdzv-id e2e-run --master-port auto -- \
    "$PY" "$here/check_env.py" $n
  expect_rc 0 "world $n gloo all_reduce"
  for r in $(seq 0 $((n - 1))); do expect_in "$WORK/out$n" "[$(hostname):$r] rank $r: env ok, all_reduce ok"; done
done
finish
