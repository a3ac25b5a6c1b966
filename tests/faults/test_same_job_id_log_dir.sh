#!/usr/bin/env bash
# Scenario (issue 17 item 1): two launchers of the same job id with the same --log-dir. They
# used to share <log-dir>/<job-id>/job.json (opened with O_TRUNC, not atomic): one job trained
# the other's settings, or read half a file. The run folder <log-dir>/<job-id> belongs to one
# live launcher (a lock naming its holder): a second one exits 2 before any rank starts, naming
# the holder; once the first has ended, the id can be used again (the lock dies with its holder).
. "$(dirname "$0")/lib.sh"
L=$WORK/logs
"${tagged[@]}" "$MTRAIN" launch --nproc-per-node 2 --master-port 0 --job-id J --log-dir "$L" -- \
  sh -c 'echo "first $RANK"; sleep 4' >"$WORK/first" 2>&1 &
first=$!
wait_for 10 count_tagged_at_least 3 || fail "first launcher running" ">= 3 processes" "$(tagged_pids | wc -l)"
run_mtrain 20 "$WORK/second" launch --nproc-per-node 2 --master-port 0 --job-id J --log-dir "$L" -- sh -c 'echo "second $RANK"'
expect_rc 2 "second launcher of job J in the same --log-dir"
expect_in "$WORK/second" "pid $first"
grep -q "second" "$L/J/attempt_0/0/stdout.log" 2>/dev/null \
  && fail "the first job's logs are its own" "no 'second' line" "the second job wrote into them" \
  || ok "the first job's logs are its own" "no 'second' line" "none"
wait "$first"; rc=$?
expect_rc 0 "first launcher"
run_mtrain 20 "$WORK/third" launch --nproc-per-node 2 --master-port 0 --job-id J --log-dir "$L" -- sh -c 'echo "third $RANK"'
expect_rc 0 "the same id again after the first ended (the lock went with its holder)"
# job.json is written by rename of a new file, never through what is planted at its name.
if [ -x "$WORKER" ]; then
  mkdir -p "$L/K" && echo victim >"$WORK/victim" && ln -s "$WORK/victim" "$L/K/job.json"
  run_mtrain 120 "$WORK/trainer" launch --nproc-per-node 1 --master-port 0 --job-id K --log-dir "$L" \
    --model mlp --batch-size 4 --max-steps 2 --work-dir "$WORK/wd"
  expect_rc 0 "bundled trainer with a symbolic link planted at job.json"
  [ "$(cat "$WORK/victim")" = victim ] && ok "planted link's target untouched" "victim" "victim" \
    || fail "planted link's target untouched" "victim" "$(head -c 60 "$WORK/victim")"
fi
no_survivors
finish
