#!/usr/bin/env bash
# Scenario (issue 17 item 2): two jobs started on one work dir. Before: both ran, rank 0 of each
# deleted the other's .tmp_step_* (its save in progress), and the work dir ended with one job's
# checkpoints and metrics lost or a COMPLETE checkpoint that failed `verify`. Now the second job
# fails at once naming the holder (job id, host, pid) and the first finishes with every
# checkpoint verifying. A stale lock — its holder dead on this host, or silent on another host
# for longer than the lease — is taken over with a notice; a live one on another host refuses.
. "$(dirname "$0")/lib.sh"
need_verify
wd=$WORK/W
"${tagged[@]}" timeout -k 5 120 "$MTRAIN" launch $(trainer_args "$wd" --master-port 0 --job-id jobA --max-steps 100 \
  --checkpoint-interval 5 --set checkpoint.keep=1000) >"$WORK/a.out" 2>&1 &
a=$!
wait_for 60 test -e "$wd/checkpoints/step_5/COMPLETE" || fail "job A checkpoints" "step_5" "none"
run_mtrain 60 "$WORK/b.out" launch $(trainer_args "$wd" --master-port 0 --job-id jobB --max-steps 40 --seed 2 \
  --checkpoint-interval 5 --set checkpoint.keep=1000)
expect_rc_not "job B on job A's work dir"
expect_in "$WORK/b.out" "is in use by job jobA"
expect_in "$WORK/b.out" "host $(hostname)"
expect_any "$WORK/b.out" "report names the holder's pid" "pid "
wait "$a"; rc=$?
expect_rc 0 "job A, undisturbed"
bad=0; n=0
for d in $(complete_checkpoints "$wd"); do
  n=$((n + 1))
  timeout 60 "$MTRAIN" checkpoint verify "$d" >"$WORK/v.out" 2>&1 || { bad=$((bad + 1)); sed 's/^/    | /' "$WORK/v.out"; }
done
[ "$bad" -eq 0 ] && [ "$n" -gt 0 ] && ok "every complete checkpoint verifies" "0 bad" "$n checkpoints, 0 bad" \
  || fail "every complete checkpoint verifies" "0 bad" "$n checkpoints, $bad bad"
if ls -a "$wd/checkpoints" | grep -q '^\.tmp_step_'; then fail "no partial save left" "none" "$(ls -a "$wd/checkpoints" | grep tmp_step)"
else ok "no partial save left" "none" "none"; fi

# Stale locks: a dead pid on this host; another host silent for 10 minutes; another host alive.
plant_lock "$wd" "$(hostname)" "$(dead_pid)"
run_mtrain 120 "$WORK/c.out" launch $(trainer_args "$wd" --master-port 0 --max-steps 2 --overwrite)
expect_rc 0 "dead holder on this host: taken over"
expect_in "$WORK/c.out" "no longer running; taking the lock over"
plant_lock "$wd" other-node.example 4242; touch -d '-10 min' "$wd/.mtrain.lock"
run_mtrain 120 "$WORK/d.out" launch $(trainer_args "$wd" --master-port 0 --max-steps 2 --overwrite)
expect_rc 0 "silent holder on another host: taken over"
expect_in "$WORK/d.out" "heartbeat stopped"
plant_lock "$wd" other-node.example 4242
run_mtrain 120 "$WORK/e.out" launch $(trainer_args "$wd" --master-port 0 --max-steps 2)
expect_rc_not "live holder on another host"
expect_in "$WORK/e.out" "is in use by job ghost (host other-node.example, pid 4242"
no_survivors
finish
