#!/usr/bin/env bash
# Scenario (issue 17 item 14, launcher half): a launcher killed by SIGKILL (or USR1 at any
# moment, or SIGPIPE: see console_gone and usr1_storm) left its private run folder
# <TMPDIR>/<job>.<random>/ (job.json, error files) behind. The guardian removes it once the
# launcher is gone; a --log-dir folder is the user's and is kept.
. "$(dirname "$0")/lib.sh"
mkdir -p "$WORK/tmp"
TMPDIR=$WORK/tmp "${tagged[@]}" "$MTRAIN" launch --nproc-per-node 2 --master-port 0 --job-id clean1 -- \
  sh -c 'echo up; exec sleep 300' >"$WORK/out" 2>&1 &
launcher=$!
wait_for 10 count_tagged_at_least 4 || fail "job running" ">= 4 processes" "$(tagged_pids | wc -l)"
run_dirs() { ls -d "$WORK"/tmp/clean1.* 2>/dev/null; }
[ -n "$(run_dirs)" ] && ok "the run folder exists while the job runs" "exists" "$(run_dirs | sed "s|$WORK|\$WORK|")" \
  || fail "the run folder exists while the job runs" "exists" "missing"
kill -KILL "$launcher"; wait "$launcher" 2>/dev/null
no_run_dir() { [ -z "$(run_dirs)" ]; }
wait_for 5 no_run_dir && ok "launcher SIGKILLed: its run folder is removed" "gone" "gone" \
  || fail "launcher SIGKILLed: its run folder is removed" "gone" "$(run_dirs | sed "s|$WORK|\$WORK|")"
no_survivors
# With --log-dir the folder is the user's: kept.
"${tagged[@]}" "$MTRAIN" launch --nproc-per-node 1 --master-port 0 --job-id clean2 --log-dir "$WORK/logs" -- \
  sh -c 'echo up; exec sleep 300' >"$WORK/out2" 2>&1 &
launcher=$!
wait_for 10 count_tagged_at_least 3
wait_for 5 grep -q up "$WORK/logs/clean2/attempt_0/0/stdout.log"
kill -KILL "$launcher"; wait "$launcher" 2>/dev/null
no_survivors
[ -e "$WORK/logs/clean2/attempt_0/0/stdout.log" ] && ok "a --log-dir run folder is kept" "kept" "kept" \
  || fail "a --log-dir run folder is kept" "kept" "removed"
finish
