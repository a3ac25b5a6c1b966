#!/usr/bin/env bash
# Scenario (issue 17 item 10, the message half): a rank dies of a C++ exception from Gloo, whose
# stderr ends in c10's 11-frame backtrace. The report's "last lines of stderr" used to be that
# stack trace, with the message pushed out. Frames are folded into one line; the message stays.
. "$(dirname "$0")/lib.sh"
prog='if [ "$RANK" = 1 ]; then
  for i in $(seq 1 12); do echo "training line $i" >&2; done
  echo "terminate called after throwing an instance of '\''gloo::IoException'\''" >&2
  echo "  what():  [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:27341" >&2
  echo "Exception raised from recvFrom at ../third_party/gloo/gloo/transport/tcp/pair.cc:598 (most recent call first):" >&2
  for i in $(seq 0 10); do echo "frame #$i: <unknown function> + 0x$i (0x7f00 in /usr/lib/libtorch_cpu.so)" >&2; done
  exit 134
fi
exec sleep 30'
run_mtrain 30 "$WORK/out" launch --nproc-per-node 2 --master-port 0 --log-dir "$WORK/logs" --job-id st -- sh -c "$prog"
expect_rc 134 "rank 1 aborts with a Gloo exception and a backtrace"
expect_in "$WORK/out" "Connection closed by peer"
expect_in "$WORK/out" "11 C++ stack frames left out"
report=$(sed -n '/^root cause/,$p' "$WORK/out")
if grep -q "frame #" <<<"$report"; then fail "no stack frame line in the report" "none" "$(grep -c 'frame #' <<<"$report") lines"
else ok "no stack frame line in the report" "none" "none"; fi
n=$(grep -c "frame #" "$WORK/logs/st/attempt_0/1/stderr.log")
[ "$n" = 11 ] && ok "the log file keeps every frame" "11" "$n" || fail "the log file keeps every frame" "11" "$n"
no_survivors
finish
