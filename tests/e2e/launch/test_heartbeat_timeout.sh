#!/usr/bin/env bash
# --heartbeat-timeout: a rank with no output and an untouched MTRAIN_HEARTBEAT_FILE is reported
# and the job is torn down with exit 75; touching the file or writing output counts as progress.
. "$(dirname "$0")/../lib.sh"
prog='if [ "$RANK" = 1 ]; then exec sleep 60; fi
      for i in $(seq 100); do touch "$MTRAIN_HEARTBEAT_FILE"; sleep 0.1; done'
run_mtrain "$WORK/stall" launch --master-port auto --nproc-per-node 2 --heartbeat-timeout 1 --grace-period 1 -- sh -c "$prog"
expect_rc 75 "a stalled rank"
expect_in "$WORK/stall" "mtrain: rank 1 (pid "
expect_in "$WORK/stall" "made no progress for"
expect_in "$WORK/stall" "cause:      rank 1"
expect_not_in "$WORK/stall" "rank 0 (pid"

# Output alone keeps a rank alive; the job ends normally.
run_mtrain "$WORK/talk" launch --master-port auto --nproc-per-node 2 --heartbeat-timeout 1 -- sh -c 'for i in $(seq 15); do echo step $i; sleep 0.1; done'
expect_rc 0 "ranks that keep writing output"
# Touching the heartbeat file alone does too.
run_mtrain "$WORK/touch" launch --master-port auto --nproc-per-node 1 --heartbeat-timeout 1 \
  -- sh -c 'test -n "$MTRAIN_HEARTBEAT_FILE" || exit 9; for i in $(seq 15); do touch "$MTRAIN_HEARTBEAT_FILE"; sleep 0.1; done'
expect_rc 0 "a silent rank that touches its heartbeat file"
finish
