#!/usr/bin/env bash
# Scenario (issue 17 item 7): hostile structured input. A 443-byte accelerate YAML with a
# nine-level alias bomb (9^9 nodes once expanded), a job file with the same bomb, a DeepSpeed
# JSON nested 100,000 deep and a 20 MiB job file: every reader refuses each with exit 2 and one
# paragraph, in well under the time and memory an expansion would take (the test bounds both:
# 20 s and a 4 GiB address space per command; before the fix `config import` ran out of memory).
. "$(dirname "$0")/lib.sh"
bomb() {  # FIRST_KEY: anchors a0..a8, each a list of nine aliases of the one before
  local i k line
  echo "$1: MULTI_GPU"
  echo "a0: &a0 [x,x,x,x,x,x,x,x,x]"
  for i in 1 2 3 4 5 6 7 8; do
    line="a$i: &a$i [*a$((i - 1))"; for k in 2 3 4 5 6 7 8 9; do line+=",*a$((i - 1))"; done
    echo "$line]"
  done
  echo "num_processes: *a8"
}
bomb distributed_type >"$WORK/accelerate.yaml"
bomb strategy >"$WORK/job.yaml"
"$PY" -c 'print("{\"train_batch_size\": 8, \"x\": " + "[" * 100000 + "]" * 100000 + "}")' >"$WORK/ds_config.json"
{ echo "strategy: ddp"; head -c $((20 << 20)) /dev/zero | tr '\0' '#'; echo; } >"$WORK/big.yaml"

# bounded COMMAND...: 20 s and 4 GiB of address space; sets rc, output in $WORK/out.
bounded() { (ulimit -v 4194304; timeout -k 2 20 env MTRAIN_TEST_TAG="$TAG" "$MTRAIN" "$@") >"$WORK/out" 2>&1; rc=$?; }

bounded config import "$WORK/accelerate.yaml"
expect_rc 2 "config import of the accelerate alias bomb"
expect_in "$WORK/out" "alias"
bounded config validate "$WORK/job.yaml"
expect_rc 2 "config validate of the job-file alias bomb"
expect_in "$WORK/out" "alias"
bounded launch --nproc-per-node 2 --master-port 0 --config "$WORK/job.yaml" -- bash -c 'echo started-$RANK'
expect_rc 2 "launch --config with the alias bomb"
if grep -q "started-" "$WORK/out"; then fail "no rank started" "none" "a rank ran"; else ok "no rank started" "none" "none"; fi
bounded config import "$WORK/ds_config.json"
expect_rc 2 "config import of a DeepSpeed JSON nested 100000 deep"
expect_in "$WORK/out" "nested"
bounded config validate "$WORK/big.yaml"
expect_rc 2 "config validate of a 20 MiB job file"
expect_in "$WORK/out" "MiB"
no_survivors
finish
