#!/usr/bin/env bash
# Scenario: a rank hangs (alive, no output, no heartbeat). With --heartbeat-timeout the
# launcher notices, names the rank and tears the job down; ranks that keep touching their
# MTRAIN_HEARTBEAT_FILE are never flagged.
. "$(dirname "$0")/lib.sh"
need_flag --heartbeat-timeout "multi-node brief H3 item 4"
run_mtrain 120 "$WORK/out" launch --nproc-per-node 2 --heartbeat-timeout 3 --grace-period 2 -- bash -c \
  'if [ "$RANK" = 1 ]; then echo "rank 1 stalls"; exec sleep 300; fi
   for i in $(seq 600); do touch "$MTRAIN_HEARTBEAT_FILE"; sleep 0.2; done'
expect_rc_not "rank 1 hangs"
expect_in "$WORK/out" "made no progress"
expect_any "$WORK/out" "report names the hung rank" "rank 1 (pid" "rank 1 "
no_survivors

# No false alarm: both ranks beat for 6 s (twice the timeout), then finish.
run_mtrain 120 "$WORK/ok" launch --nproc-per-node 2 --heartbeat-timeout 3 -- bash -c \
  'for i in $(seq 30); do touch "$MTRAIN_HEARTBEAT_FILE"; sleep 0.2; done'
expect_rc 0 "healthy ranks beating"
no_survivors
finish
