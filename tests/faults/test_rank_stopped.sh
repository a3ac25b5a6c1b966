#!/usr/bin/env bash
# Scenario (issue 17 item 10): a rank stops (SIGSTOP: a debugger, a `kill -STOP`, a swapped-out
# node) while its peers wait for it. It used to cost the comm timeout (300 s) and the report
# blamed the peer that noticed. The launcher sees a rank stopped for --stopped-timeout (default
# 10 s), names it as the root cause and stops the job, well under a minute.
. "$(dirname "$0")/lib.sh"
start=$(date +%s)
run_mtrain 120 "$WORK/out" launch --nproc-per-node 3 --master-port 0 -- \
  sh -c 'if [ "$RANK" = 1 ]; then sleep 0.5; kill -STOP $$; fi; sleep 100; exit 0'
took=$(( $(date +%s) - start ))
expect_rc_not "rank 1 stopped"
expect_in "$WORK/out" "rank:       1 (local rank 1)"
expect_in "$WORK/out" "has been stopped"
[ "$took" -le 30 ] && ok "detected well under a minute" "<= 30 s" "$took s" || fail "detected well under a minute" "<= 30 s" "$took s"
no_survivors
finish
