#!/usr/bin/env bash
# Two launchers with the same job id at once (every fresh Slurm cluster numbers its jobs from 1;
# --job-id is the user's): each has its own run folder, so the one that ends first and removes
# its folder leaves the other's job.json and error files alone.
. "$(dirname "$0")/../lib.sh"
export TMPDIR="$WORK/tmp"
mkdir -p "$TMPDIR"
# The long job's rank waits until the short job has ended, then checks its own run folder (the
# folder of its error file) is still there.
timeout -k 5 60 "$MTRAIN" launch --job-id same-id --nproc-per-node 1 --master-port 0 -- \
  /bin/sh -c 'while [ ! -e "$0/short-done" ]; do sleep 0.05; done; d=$(dirname "$(dirname "$(dirname "$TORCHELASTIC_ERROR_FILE")")"); [ -d "$d" ] && echo "run folder kept: $d"' \
  "$WORK" >"$WORK/long" 2>&1 &
long=$!
for _ in $(seq 100); do [ "$(ls "$TMPDIR" | wc -l)" -ge 1 ] && break; sleep 0.05; done
run_mtrain "$WORK/short" launch --job-id same-id --nproc-per-node 1 --master-port 0 -- /bin/true
expect_rc 0 "the short job with the same id"
touch "$WORK/short-done"
wait $long; rc=$?
expect_rc 0 "the long job with the same id"
expect_in "$WORK/long" "run folder kept: $TMPDIR/same-id."
[ -z "$(ls -A "$TMPDIR")" ] && ok "both run folders are gone at the end" || fail "left in TMPDIR: $(ls -A "$TMPDIR")"
finish
