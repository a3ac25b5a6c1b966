#!/usr/bin/env bash
# (d) The launcher SIGKILLed → no rank survives 2 s later. Also SIGTERM to the launcher is
# forwarded to every rank, and the launcher exits 128+15.
. "$(dirname "$0")/../lib.sh"
# Any free port: the default 29500 may be taken on a shared machine (a busy port is tested elsewhere).
export MTRAIN_MASTER_PORT=auto
m="8$$.25"
"$MTRAIN" launch --nproc-per-node 3 -- sleep 300.$$ >"$WORK/d" 2>&1 &
launcher=$!
for _ in $(seq 50); do [ "$(pgrep -fc "sleep 300.$$")" -ge 3 ] && break; sleep 0.1; done
[ "$(pgrep -fc "sleep 300.$$")" -ge 3 ] && ok "3 ranks running" || fail "ranks did not start"
kill -KILL $launcher
wait $launcher 2>/dev/null
sleep 2
pgrep -f "sleep 300.$$" >/dev/null && { fail "ranks survive a SIGKILLed launcher"; pkill -9 -f "sleep 300.$$"; } || ok "no rank survives the SIGKILLed launcher"

"$MTRAIN" launch --nproc-per-node 2 -- bash -c 'trap "echo got TERM on $RANK; exit 0" TERM; sleep '"$m"' & wait' >"$WORK/t" 2>&1 &
launcher=$!
# Count the sleeps themselves ("^sleep"): the ranks' bash command lines hold the same text, and
# a TERM that reaches a bash before its trap is set ends it without the line this test expects.
for _ in $(seq 50); do [ "$(pgrep -fc "^sleep $m")" -ge 2 ] && break; sleep 0.1; done
kill -TERM $launcher
timeout 20 tail --pid=$launcher -f /dev/null
wait $launcher; rc=$?
expect_rc 143 "SIGTERM to the launcher"
expect_in "$WORK/t" "got TERM on 0"
expect_in "$WORK/t" "got TERM on 1"
no_survivors "$m"
finish
