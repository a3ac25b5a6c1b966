#!/usr/bin/env bash
# Scenario (issue 17 item 13): a program that always fails, with restarts. Without a pause the
# launcher burned through 1000 restarts in 2.4 s. Restarts now wait 1 s, 2 s, 4 s … (capped at
# 30 s) and say so.
. "$(dirname "$0")/lib.sh"
start=$(date +%s.%N)
run_mtrain 60 "$WORK/out" launch --nproc-per-node 1 --master-port 0 --max-restarts 3 -- sh -c 'exit 3'
took=$($PY -c "import sys; print(round($(date +%s.%N) - $start, 1))")
expect_rc 3 "always failing, --max-restarts 3"
expect_in "$WORK/out" "restarting in 1.0 s (restart 1/3)"
expect_in "$WORK/out" "restarting in 2.0 s (restart 2/3)"
expect_in "$WORK/out" "restarting in 4.0 s (restart 3/3)"
$PY -c "import sys; sys.exit(0 if $took >= 6.5 else 1)" && ok "3 restarts take the backoff (1+2+4 s)" ">= 6.5 s" "$took s" \
  || fail "3 restarts take the backoff (1+2+4 s)" ">= 6.5 s" "$took s"
# A stop during the pause ends the launcher at once.
"${tagged[@]}" "$MTRAIN" launch --nproc-per-node 1 --master-port 0 --max-restarts 100 -- sh -c 'exit 3' >"$WORK/term" 2>&1 &
launcher=$!
sleep 2.5
kill -TERM "$launcher"
wait_for 3 sh -c "! kill -0 $launcher 2>/dev/null"
wait "$launcher"; rc=$?
expect_rc 143 "SIGTERM during the pause"
no_survivors
finish
