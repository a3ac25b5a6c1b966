#!/usr/bin/env bash
# Scenario (issue 17 item 10, the bundled trainer's half): mtrain-worker recorded no
# TORCHELASTIC_ERROR_FILE, so the launcher could only blame the first rank to exit.
# 1. Disk full for one rank: rank 1's shard of checkpoint step_4 fails with ENOSPC (a preloaded
#    write() that fails for that file only — a tmpfs cannot fill up for one rank of a shared
#    folder). Rank 0 then fails too ("1 of 2 rank(s) could not write their part") and exits
#    first (rank 1's cleanup takes 2 s). Before: the report blamed rank 0 and listed rank 1 as "stopped by mtrain". Now each
#    worker writes torchrun's error file (message, rank, host, pid, timestamp; atomically) at the
#    moment of its own fault, and rank 1 — the earliest — is the root cause, its ENOSPC shown.
# 2. A collective timeout on the Gloo path (rank 1 SIGSTOPped, comm.timeout_s 4, no shared
#    memory): the report's message names the rank that never reached the collective, and no
#    C++ backtrace is the message.
. "$(dirname "$0")/lib.sh"
need_worker
CC=$(command -v cc || command -v gcc) || skip "no C compiler to build the ENOSPC injector"
cat >"$WORK/enospc.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
/* write() fails with ENOSPC for rank $ENOSPC_RANK's shard of checkpoint step_$ENOSPC_STEP; that
   rank is then slow to exit (2 s of cleanup, as a real one flushing or unmounting), so that its
   peer's consequent failure always exits first: the blame cannot come from the exit order. */
static int failed;
__attribute__((destructor)) static void slow_cleanup(void) {
  struct timespec t0, t;
  if (!failed) return;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t); while (t.tv_sec - t0.tv_sec < 2);
}
ssize_t write(int fd, const void* buf, size_t n) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = (ssize_t (*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  const char *rank = getenv("RANK"), *fail = getenv("ENOSPC_RANK"), *step = getenv("ENOSPC_STEP");
  if (rank && fail && step && strcmp(rank, fail) == 0) {
    char link[64], path[4096], want[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, path, sizeof path - 1);
    snprintf(want, sizeof want, ".tmp_step_%s.", step);
    if (len > 0 && (path[len] = 0, strstr(path, want) && strstr(path, "shard_rank"))) { failed = 1; errno = ENOSPC; return -1; }
  }
  return real(fd, buf, n);
}
C
"$CC" -shared -fPIC -o "$WORK/enospc.so" "$WORK/enospc.c" -ldl || skip "cannot build the ENOSPC injector"

logs=$WORK/logs
timeout -k 5 300 env MTRAIN_TEST_TAG="$TAG" ENOSPC_RANK=1 ENOSPC_STEP=4 LD_PRELOAD="$WORK/enospc.so" "$MTRAIN" launch \
  $(trainer_args "$WORK/run" --master-port 0 --max-steps 6 --checkpoint-interval 2 --job-id full --log-dir "$logs") \
  >"$WORK/full.out" 2>&1
rc=$?
expect_rc 1 "rank 1's disk is full at step_4"
root=$(sed -n '/^root cause/,/^other failed ranks/p' "$WORK/full.out")
grep -q "rank:       1 (local rank 1)" <<<"$root" && ok "root cause is rank 1 (the rank that hit ENOSPC)" "rank 1" "rank 1" \
  || fail "root cause is rank 1 (the rank that hit ENOSPC)" "rank 1" "$(grep 'rank:' <<<"$root")"
grep -q "error file: .*/attempt_0/1/error.json" <<<"$root" && grep -q "No space left on device" <<<"$root" \
  && ok "root cause section shows rank 1's error file: No space left on device" "present" "present" \
  || fail "root cause section shows rank 1's error file: No space left on device" "present" "$(sed 's/^/    | /' <<<"$root")"
# torchrun's format, whole (written by rename), with the rank and a timestamp.
$PY - "$logs/full/attempt_0/1/error.json" "$logs/full/attempt_0/0/error.json" <<'PY' >"$WORK/format" 2>&1
import json, os, sys, time
one = json.load(open(sys.argv[1]))
m = one["message"]
assert "No space left on device" in m["message"], m["message"]
assert "frame #" not in m["message"]
info = m["extraInfo"]
assert info["rank"] == 1 and int(info["pid"]) > 0 and info["host"], info
assert abs(int(info["timestamp"]) - time.time()) < 600, info
zero = json.load(open(sys.argv[2]))
assert "could not write their part" in zero["message"]["message"], zero
assert os.stat(sys.argv[1]).st_mtime_ns < os.stat(sys.argv[2]).st_mtime_ns, "rank 1's record is not the earlier"
leftovers = [f for f in os.listdir(os.path.dirname(sys.argv[1])) if f.endswith(".part")]
assert not leftovers, leftovers
print("ok")
PY
[ "$(cat "$WORK/format")" = ok ] && ok "error files in torchrun's format; rank 1's the earlier" "ok" "ok" \
  || fail "error files in torchrun's format; rank 1's the earlier" "ok" "$(tail -3 "$WORK/format")"
no_survivors

# 2. Gloo collective timeout: rank 1 stopped mid-training.
"${tagged[@]}" timeout -k 5 120 "$MTRAIN" launch $(trainer_args "$WORK/run2" --master-port 0 --max-steps 100000 \
  --set comm.timeout_s=4 --set comm.shared_memory=false) >"$WORK/stop.out" 2>&1 &
launcher=$!
wait_for 60 grep -qs "Iter(train)" "$WORK/stop.out"
rank1=""
for p in $(tagged_pids); do
  tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -qx RANK=1 && grep -q mtrain-worker /proc/$p/cmdline 2>/dev/null && rank1=$p
done
[ -n "$rank1" ] && kill -STOP "$rank1"
wait "$launcher"; rc=$?
[ -n "$rank1" ] && kill -CONT "$rank1" 2>/dev/null
expect_rc_not "rank 1 stopped, comm.timeout_s 4"
expect_in "$WORK/stop.out" "rank 1 never reached it"
if grep -qE "frame #|Exception raised from" "$WORK/stop.out"; then
  fail "no C++ backtrace in the output" "none" "$(grep -cE 'frame #' "$WORK/stop.out") frame lines"
else ok "no C++ backtrace in the output" "none" "none"; fi
no_survivors
finish
