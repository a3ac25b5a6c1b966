#!/usr/bin/env bash
# (e) --max-restarts 2 with a rank that fails once: the job succeeds on attempt 1.
. "$(dirname "$0")/../lib.sh"
# Any free port: the default 29500 may be taken on a shared machine (a busy port is tested elsewhere).
export MTRAIN_MASTER_PORT=auto
run_mtrain "$WORK/e" launch --nproc-per-node 2 --max-restarts 2 -- bash -c \
  'echo "attempt $TORCHELASTIC_RESTART_COUNT of max $TORCHELASTIC_MAX_RESTARTS"; if [ "$RANK" = 1 ] && [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then exit 5; fi; exit 0'
expect_rc 0 "job succeeds after one restart"
expect_in "$WORK/e" "attempt 0 failed: rank 1"
expect_in "$WORK/e" "attempt 1 of max 2"
expect_not_in "$WORK/e" "attempt 2 of max 2"

run_mtrain "$WORK/f" launch --nproc-per-node 2 --max-restarts 1 -- bash -c '[ "$RANK" = 0 ] && exit 6; exit 0'
expect_rc 6 "restarts exhausted → the root cause's code"
expect_in "$WORK/f" "failed on attempt 1 (max restarts 1)"
finish
