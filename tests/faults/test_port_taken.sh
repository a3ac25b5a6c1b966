#!/usr/bin/env bash
# Scenario: the master port is already taken by another process. Nothing starts; exit 2 with
# a paragraph naming the port (and its holder when visible) and what to do.
. "$(dirname "$0")/lib.sh"
"$PY" -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True); time.sleep(120)' >"$WORK/port" &
holder=$!
cleanup_hooks+=("kill $holder 2>/dev/null")
wait_for 10 test -s "$WORK/port" || fail "port holder started" "a port" "none"
port=$(cat "$WORK/port")
run_mtrain 60 "$WORK/out" launch --nproc-per-node 2 --master-port "$port" -- bash -c 'echo started-$RANK; sleep 300'
expect_rc 2 "master port $port taken"
expect_in "$WORK/out" "$port"
expect_in "$WORK/out" "pid $holder"
if grep -q "started-" "$WORK/out"; then fail "no rank started" "none" "a rank ran"; else ok "no rank started" "none" "none"; fi
no_survivors
finish
