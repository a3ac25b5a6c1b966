#!/usr/bin/env bash
# Scenario: one rank exits non-zero. The launcher stops the others (SIGTERM), exits with the
# failing rank's code and names it; the rank's last output is in the report.
. "$(dirname "$0")/lib.sh"
run_mtrain 60 "$WORK/out" launch --nproc-per-node 3 --grace-period 2 -- bash -c \
  'if [ "$RANK" = 2 ]; then echo "rank 2 giving up" >&2; sleep 0.5; exit 7; fi; exec sleep 300'
expect_rc 7 "rank 2 exits 7"
expect_in "$WORK/out" "rank:       2 (local rank 2)"
expect_in "$WORK/out" "exit:       exit code 7"
expect_in "$WORK/out" "rank 2 giving up"
expect_in "$WORK/out" "stopped by mtrain during teardown"
no_survivors
finish
