#!/usr/bin/env bash
# Scenario (issue 17, extras): `--launcher ssh` with a hostfile that does not exist (or none at
# all) silently ran the job on this machine. An explicit ssh launcher needs its hosts: exit 2
# before anything starts, naming the file.
. "$(dirname "$0")/lib.sh"
run_mtrain 20 "$WORK/missing" launch --launcher ssh --hostfile "$WORK/no-such-hostfile" --nproc-per-node 1 --master-port 0 -- sh -c 'echo ran'
expect_rc 2 "--launcher ssh with a missing hostfile"
expect_in "$WORK/missing" "$WORK/no-such-hostfile"
grep -q "ran" "$WORK/missing" && fail "nothing ran" "none" "a rank ran" || ok "nothing ran" "none" "none"
run_mtrain 20 "$WORK/none" launch --launcher ssh --nproc-per-node 1 --master-port 0 -- sh -c 'echo ran'
expect_rc 2 "--launcher ssh without --hostfile"
expect_in "$WORK/none" "--hostfile"
# The default launcher keeps its documented fallback: a missing hostfile means this machine.
run_mtrain 20 "$WORK/auto" launch --hostfile "$WORK/no-such-hostfile" --nproc-per-node 1 --master-port 0 -- sh -c 'echo ran'
expect_rc 0 "--launcher auto with a missing hostfile (this machine)"
no_survivors
finish
