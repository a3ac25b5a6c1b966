#!/usr/bin/env bash
# Disk full while writing a checkpoint: the checkpoints folder is a small tmpfs (in a private
# user+mount namespace) that holds one checkpoint but not two. The worker must fail with a
# clear ENOSPC error, remove the partial .tmp_step_<N>, and keep the previous checkpoint valid.
. "$(dirname "$0")/../lib.sh"
W="${MTRAIN_BIN_DIR}/mtrain-worker"
[ -x "$W" ] || skip "mtrain-worker is not built (LibTorch build off)"
unshare -rm true 2>/dev/null || skip "user+mount namespaces are not available here (unshare -rm)"
args=(--set model.n_layer=2 --set model.n_embd=32 --set model.block_size=16 --set train.batch_size=4
      --set train.log_interval=2 --set checkpoint.interval=2 --set checkpoint.keep=3)
# One checkpoint's size, measured on the real disk.
timeout 120 "$W" "${args[@]}" --set train.max_steps=2 --set train.work_dir="$WORK/probe" >"$WORK/probe.out" 2>&1 \
  || { fail "probe run"; cat "$WORK/probe.out"; }
one=$(du -sb "$WORK/probe/checkpoints/step_2" | cut -f1)
size=$(( (one * 3 / 2 / 4096 + 1) * 4096 ))
ok "one checkpoint is $one bytes; tmpfs of $size bytes"
mkdir -p "$WORK/wd/checkpoints"
timeout 180 unshare -rm bash -s "$W" "$WORK/wd" "$size" "${args[@]}" >"$WORK/ns.out" 2>&1 <<'SH'
W=$1; wd=$2; size=$3; shift 3
mount -t tmpfs -o size=$size tmpfs "$wd/checkpoints" || { echo "mount failed"; exit 0; }
"$W" "$@" --set train.max_steps=10 --set train.work_dir="$wd" >"$wd/train.out" 2>&1
echo "train_rc=$?"
ls -a "$wd/checkpoints" | sed 's/^/entry: /'
"$W" checkpoint verify "$wd/checkpoints/step_2" 2>&1
echo "verify_rc=$?"
SH
cat "$WORK/ns.out" "$WORK/wd/train.out" >"$WORK/all.out"
grep -q "mount failed" "$WORK/ns.out" && skip "cannot mount a tmpfs in a user namespace here"
expect_in "$WORK/all.out" "train_rc=1"
expect_in "$WORK/all.out" "No space left on device"
expect_in "$WORK/all.out" "checkpoint step_4 was not saved"
expect_in "$WORK/all.out" "the previous checkpoints under $WORK/wd/checkpoints are kept"
expect_in "$WORK/all.out" "entry: step_2"
expect_not_in "$WORK/all.out" "entry: .tmp_step_4"
expect_in "$WORK/all.out" "verify_rc=0"
finish
