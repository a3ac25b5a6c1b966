#!/usr/bin/env bash
# Scenario (issue 17, also): /dev/shm full. The CPU ranks' fp32 collectives go through a
# /dev/shm segment; when it cannot be created they fall back to Gloo over TCP — before, silently
# (the worker's line said just "gloo"). Now the fallback is said once, with the reason. The job
# runs in a private mount namespace whose /dev/shm is a 1 MiB tmpfs, so the machine's own
# /dev/shm is never filled.
. "$(dirname "$0")/lib.sh"
need_worker
need_root "a private /dev/shm (unshare --mount)"
command -v unshare >/dev/null || skip "no unshare(1)"
unshare --mount true 2>/dev/null || skip "unshare --mount is not permitted here"
timeout -k 5 300 unshare --mount --propagation private sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm && exec "$@"' sh \
  env "MTRAIN_TEST_TAG=$TAG" "$MTRAIN" launch $(trainer_args "$WORK/run" --master-port 0 --max-steps 2) >"$WORK/out" 2>&1
rc=$?
expect_rc 0 "training with a full /dev/shm"
expect_in "$WORK/out" "shared-memory collectives unavailable"
expect_in "$WORK/out" "No space left on device"
n=$(grep -c "shared-memory collectives unavailable" "$WORK/out")
[ "$n" -eq 1 ] && ok "said once" "1" "$n" || fail "said once" "1" "$n"
no_survivors
finish
