#!/usr/bin/env bash
# Scenario (issue 17 item 3): a slow console reader while signals keep arriving. Boost.Asio
# installs its handlers without SA_RESTART, so a blocked write() to the console returns EINTR;
# the relay must retry it (and finish partial writes): every line arrives.
. "$(dirname "$0")/lib.sh"
N=60000
mkfifo "$WORK/console"
# The reader: slow (it pauses every 1000 lines, so the launcher's writes block), counts lines.
$PY -c '
import sys, time
n = 0
for line in sys.stdin:
    if line.startswith("[") and "] L" in line: n += 1
    if n % 1000 == 0: time.sleep(0.02)
print(n)' <"$WORK/console" >"$WORK/count" &
reader=$!
"${tagged[@]}" "$MTRAIN" launch --nproc-per-node 2 --master-port 0 -- sh -c "seq -f 'L%g' 1 $N" \
  >"$WORK/console" 2>"$WORK/err" &
launcher=$!
# The storm: SIGCHLD (harmless to the launcher: a reap that finds nothing) every ~0.2 ms.
signal_storm "$launcher" SIGCHLD 0.0002
storm=$!
cleanup_hooks+=("kill $storm $reader 2>/dev/null")
wait "$launcher"; rc=$?
wait "$reader"
kill "$storm" 2>/dev/null
expect_rc 0 "two ranks print $N lines each to a slow reader under a SIGCHLD storm"
got=$(cat "$WORK/count")
[ "$got" = $((2 * N)) ] && ok "every line reaches the console" "$((2 * N))" "$got" \
  || fail "every line reaches the console" "$((2 * N))" "$got"
no_survivors
finish
