#!/usr/bin/env bash
# Scenario (issue 17 item 12): processes left in a rank's own process group when the rank (its
# leader) exits — normally, or failing. They used to survive the job (only a SIGKILLed
# launcher's guardian killed them). The launcher kills the rank's group when its leader exits.
# (A process that leaves the group with setsid still escapes: docs/reliability.md.)
. "$(dirname "$0")/lib.sh"
run_mtrain 20 "$WORK/ok" launch --nproc-per-node 2 --master-port 0 -- sh -c 'sleep 300 & echo "child $!"; exit 0'
expect_rc 0 "ranks leave a child behind and exit 0"
no_survivors 5
run_mtrain 20 "$WORK/fail" launch --nproc-per-node 2 --master-port 0 -- \
  sh -c 'sleep 300 & if [ "$RANK" = 1 ]; then exit 3; fi; exec sleep 301'
expect_rc 3 "rank 1 leaves a child behind and exits 3"
no_survivors 5
finish
