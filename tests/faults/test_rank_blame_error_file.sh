#!/usr/bin/env bash
# Scenario (issue 17 item 10, the blame half): rank 0 hits "No space left on device", records it
# in its error file (TORCHELASTIC_ERROR_FILE, as torch's @record does) and is slow to exit (its
# cleanup); rank 1 times out waiting for it 2 s later and exits first. The report blamed rank 1.
# As torchrun does, the earliest error file marks the rank that failed first: rank 0 is the root
# cause; the exit code stays that of the first rank to exit.
. "$(dirname "$0")/lib.sh"
prog='if [ "$RANK" = 0 ]; then
  printf "{\"message\": {\"message\": \"OSError: [Errno 28] No space left on device: checkpoints/step_4\", \"extraInfo\": {\"timestamp\": \"%s\"}}}\n" "$(date +%s)" >"$TORCHELASTIC_ERROR_FILE"
  echo "rank 0: writing the checkpoint failed: No space left on device" >&2
  sleep 6; exit 1
fi
sleep 2; echo "rank 1: timed out waiting for rank 0 in all_reduce" >&2; exit 7'
run_mtrain 30 "$WORK/out" launch --nproc-per-node 2 --master-port 0 -- sh -c "$prog"
expect_rc 7 "rank 0 fails first but exits last; rank 1 exits 7"
root=$(sed -n '/^root cause/,/^other failed ranks/p' "$WORK/out")
grep -q "rank:       0 (local rank 0)" <<<"$root" && ok "root cause is rank 0 (the earliest error file)" "rank 0" "rank 0" \
  || fail "root cause is rank 0 (the earliest error file)" "rank 0" "$(grep 'rank:' <<<"$root")"
grep -q "No space left on device" <<<"$root" && ok "root cause section says No space left on device" "present" "present" \
  || fail "root cause section says No space left on device" "present" "absent"
expect_in "$WORK/out" "rank 1 (local rank 1"
no_survivors
finish
