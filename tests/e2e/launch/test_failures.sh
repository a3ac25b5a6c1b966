#!/usr/bin/env bash
# (b) a rank exiting 3, (c) a rank SIGKILLed: exit codes, reports, and no rank left behind.
. "$(dirname "$0")/../lib.sh"
# Any free port: the default 29500 may be taken on a shared machine (a busy port is tested elsewhere).
export MTRAIN_MASTER_PORT=auto
m="7$$.25"  # a unique sleep duration marks this test's processes
run_mtrain "$WORK/b" launch --nproc-per-node 2 --grace-period 2 -- bash -c \
  'if [ "$RANK" = 1 ]; then echo "about to fail" >&2; sleep 0.3; exit 3; fi; exec sleep '"$m"
expect_rc 3 "rank 1 exits 3 → launcher exits 3"
expect_in "$WORK/b" "rank:       1 (local rank 1)"
expect_in "$WORK/b" "exit:       exit code 3"
expect_in "$WORK/b" "about to fail"
expect_in "$WORK/b" "rank 0 (local rank 0"
expect_in "$WORK/b" "stopped by mtrain during teardown"
no_survivors "$m"

run_mtrain "$WORK/c" launch --nproc-per-node 2 -- bash -c \
  'if [ "$RANK" = 0 ]; then sleep 0.3; kill -KILL $$; fi; exec sleep '"$m"
expect_rc 137 "rank 0 SIGKILLed → 128+9"
expect_in "$WORK/c" "signal SIGKILL (9)"
expect_in "$WORK/c" "rank:       0 (local rank 0)"
no_survivors "$m"

# A rank that ignores SIGTERM is SIGKILLed after the grace period.
run_mtrain "$WORK/g" launch --nproc-per-node 2 --grace-period 0.5 -- bash -c \
  'if [ "$RANK" = 1 ]; then sleep 0.3; exit 4; fi; trap "" TERM; sleep '"$m"' & wait; wait'
expect_rc 4 "stubborn rank is killed after the grace period"
no_survivors "$m"
finish
