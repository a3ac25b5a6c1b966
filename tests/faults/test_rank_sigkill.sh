#!/usr/bin/env bash
# Scenario: a rank is SIGKILLed from outside (the OOM killer, an admin). Exit 128+9, the
# report names the rank and the signal, the other ranks are torn down.
. "$(dirname "$0")/lib.sh"
"${tagged[@]}" "$MTRAIN" launch --nproc-per-node 2 --grace-period 2 -- bash -c 'echo "rank $RANK pid $$"; exec sleep 300' \
  >"$WORK/out" 2>&1 &
launcher=$!
wait_for 20 grep -q "rank 1 pid" "$WORK/out" || fail "rank 1 started" "started" "not within 20 s"
victim=$(sed -n 's/.*rank 1 pid \([0-9]*\).*/\1/p' "$WORK/out" | head -1)
kill -KILL "$victim"
timeout 30 tail --pid="$launcher" -f /dev/null
wait "$launcher"; rc=$?
expect_rc 137 "rank 1 SIGKILLed"
expect_in "$WORK/out" "signal SIGKILL (9)"
expect_in "$WORK/out" "rank:       1 (local rank 1)"
no_survivors
finish
