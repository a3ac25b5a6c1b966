#!/usr/bin/env bash
# Scenario: the program does not exist / is not executable. Nothing starts; exit 2 naming it.
. "$(dirname "$0")/lib.sh"
run_mtrain 60 "$WORK/out" launch --nproc-per-node 2 -- /nonexistent/train.py --lr 1
expect_rc 2 "missing program"
expect_in "$WORK/out" "/nonexistent/train.py"
printf 'echo hi\n' >"$WORK/not-exec.sh"
run_mtrain 60 "$WORK/out2" launch --nproc-per-node 2 -- "$WORK/not-exec.sh"
expect_rc 2 "program without execute permission"
expect_in "$WORK/out2" "not-exec.sh"
run_mtrain 60 "$WORK/out3" launch --nproc-per-node 2 -- no-such-command-$$
expect_rc 2 "command not on PATH"
expect_in "$WORK/out3" "no-such-command-$$"
no_survivors
finish
