#!/usr/bin/env bash
# Scenario: the disk fills up while a checkpoint is written (a size-limited tmpfs holding the
# work dir: room for about one and a half checkpoints). The job fails with a clear error, the
# partial .tmp_step_* folder is removed, and the previous checkpoint is intact and verifies.
. "$(dirname "$0")/lib.sh"
need_worker
need_root "mounting a size-limited tmpfs"
# Size of one checkpoint of this job, measured on the ordinary disk.
run_mtrain 300 "$WORK/probe.out" launch $(trainer_args "$WORK/probe" --max-steps 2 --checkpoint-interval 2)
expect_rc 0 "probe run"
ck=$(du -sb "$WORK/probe/checkpoints/step_2" | cut -f1)
other=$(du -sb --exclude=checkpoints "$WORK/probe" | cut -f1)
size_kb=$(( (ck * 3 / 2 + other + 65536) / 1024 ))
mnt=$WORK/small
mkdir -p "$mnt"
mount -t tmpfs -o size=${size_kb}k mtrain-faults-tmpfs "$mnt" || skip "cannot mount a tmpfs here"
cleanup_hooks+=("umount -l '$mnt' 2>/dev/null")
wd=$mnt/run
run_mtrain 300 "$WORK/out" launch $(trainer_args "$wd" --max-steps 6 --checkpoint-interval 2)
expect_rc_not "disk full at the second checkpoint (${size_kb} KiB for ${ck}-byte checkpoints)"
expect_any "$WORK/out" "report says the disk is full" "No space left on device" "disk full" "ENOSPC"
if ls -d "$wd"/checkpoints/.tmp_step_* >/dev/null 2>&1; then
  fail "partial checkpoint removed" "no .tmp_step_*" "$(ls -d "$wd"/checkpoints/.tmp_step_*)"
else ok "partial checkpoint removed" "no .tmp_step_*" "none"; fi
expect_file "$wd/checkpoints/step_2/COMPLETE" "previous checkpoint kept"
# Load it from a copy on the ordinary disk (the tmpfs is still full).
cp -a "$wd/checkpoints/step_2" "$WORK/step_2"
loads_ok "$WORK/step_2" "$WORK/verify" && ok "previous checkpoint loads$(has_verify && echo " and verifies")" "loads" "loads" \
  || fail "previous checkpoint loads" "loads" "$(tail -3 "$WORK/verify")"
no_survivors
finish
