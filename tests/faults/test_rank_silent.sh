#!/usr/bin/env bash
# Scenario (issue 17 item 10, the silent half): a rank that beats (touches MTRAIN_HEARTBEAT_FILE,
# as mtrain-worker does every step) goes silent while alive — a hang, not a stop. Without
# --heartbeat-timeout nothing watched it: the job waited for the comm timeout (300 s). By default
# a rank that has beaten is watched: silent for max(20 s, 20 x its longest gap between beats) it
# is the named root cause (exit 75). A rank that never beats is never watched by default.
. "$(dirname "$0")/lib.sh"
start=$(date +%s)
run_mtrain 90 "$WORK/out" launch --nproc-per-node 3 --master-port 0 -- sh -c '
  i=0; while [ $i -lt 40 ]; do touch "$MTRAIN_HEARTBEAT_FILE"; sleep 0.1; i=$((i + 1)); done
  if [ "$RANK" = 1 ]; then exec sleep 120; fi
  while :; do touch "$MTRAIN_HEARTBEAT_FILE"; sleep 0.1; done'
took=$(( $(date +%s) - start ))
expect_rc 75 "rank 1 silent after beating"
expect_in "$WORK/out" "rank:       1 (local rank 1)"
expect_in "$WORK/out" "made no progress"
[ "$took" -le 35 ] && ok "found well under a minute, by default" "<= 35 s" "$took s" || fail "found well under a minute, by default" "<= 35 s" "$took s"
# Never beating (any program that ignores the heartbeat file): not watched, however quiet.
run_mtrain 60 "$WORK/quiet" launch --nproc-per-node 2 --master-port 0 -- sh -c 'sleep 3'
expect_rc 0 "quiet ranks that never beat"
no_survivors
finish
