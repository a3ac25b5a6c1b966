#!/usr/bin/env bash
# Scenario (issue 17 item 2, the launcher's half): a second bundled-trainer job on a work dir that
# a running job holds. Rank 0 refused it (exit 2) — after the launcher had started every rank
# and each had loaded LibTorch. `mtrain launch` now reads the lock itself (lib/core
# work_dir_lock.hpp) when rank 0 runs on this machine, and refuses before any rank starts: exit
# 2 well under a second, naming the holder (job id, host, pid), no rank output, no rank log.
# A live holder recorded for another host is refused the same way; a dead holder on this host
# still starts the job (rank 0 takes the lock over with its notice).
. "$(dirname "$0")/lib.sh"
need_worker
wd=$WORK/W
# Job A is stopped with SIGTERM below; a rank still joining the group, or finishing its step and
# its checkpoint, may take the launcher's whole grace period (KILL_AFTER in lib.sh says why that
# matters).
"${tagged[@]}" timeout -k "$KILL_AFTER" 120 "$MTRAIN" launch $(trainer_args "$wd" --master-port 0 --job-id jobA --max-steps 100000) \
  >"$WORK/a.out" 2>&1 &
a=$!
# Job A holds the lock once its rank 0 has recorded itself in it.
wait_for 60 grep -q '"job_id":"jobA"' "$wd/.mtrain.lock" 2>/dev/null || fail "job A holds the lock" "jobA" "$(cat "$wd/.mtrain.lock" 2>&1)"
t0=$(date +%s%N)
run_mtrain 60 "$WORK/b.out" launch $(trainer_args "$wd" --master-port 0 --job-id jobB --max-steps 2 --log-dir "$WORK/logs")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_rc 2 "job B on job A's work dir"
expect_in "$WORK/b.out" "is in use by job jobA (host $(hostname), pid "
[ "$ms" -lt 1000 ] && ok "refused well under a second" "< 1000 ms" "$ms ms" || fail "refused well under a second" "< 1000 ms" "$ms ms"
if grep -q '^\[' "$WORK/b.out" || [ -d "$WORK/logs/jobB/attempt_0" ]; then
  fail "no rank of job B started" "no rank output, no rank log" "$(grep '^\[' "$WORK/b.out" | head -2; ls "$WORK/logs/jobB" 2>&1)"
else ok "no rank of job B started" "no rank output, no rank log" "none"; fi
kill -TERM "$a" 2>/dev/null; wait "$a"; rc=$?
expect_rc 143 "job A stopped by SIGTERM (its own teardown, every rank reaped)"
no_survivors 10

# A live holder on another host (its heartbeat fresh): refused by the launcher too.
plant_lock "$wd" other-node.example 4242
run_mtrain 60 "$WORK/c.out" launch $(trainer_args "$wd" --master-port 0 --max-steps 2)
expect_rc 2 "live holder on another host"
expect_in "$WORK/c.out" "is in use by job ghost (host other-node.example, pid 4242"
grep -q '^\[' "$WORK/c.out" && fail "no rank started for the other host's holder" "none" "rank output" \
  || ok "no rank started for the other host's holder" "none" "none"
# A dead holder on this host: the job runs, rank 0 takes the lock over with its notice. (Job A's
# SIGTERM left its checkpoint there: a fresh run beside it needs --overwrite, issue 45.)
plant_lock "$wd" "$(hostname)" "$(dead_pid)"
run_mtrain 120 "$WORK/d.out" launch $(trainer_args "$wd" --master-port 0 --max-steps 2 --overwrite)
expect_rc 0 "dead holder on this host: taken over"
expect_in "$WORK/d.out" "no longer running; taking the lock over"
no_survivors
finish
