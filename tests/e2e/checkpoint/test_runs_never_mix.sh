#!/usr/bin/env bash
# Runs in one work dir never mix (issue 45). Before: after a finished 6-step run, a 3-step run in
# the same --work-dir without --resume overwrote model.pt without a word and left both runs'
# checkpoints; a later --resume auto picked the old run's step_6, printed "[6/3]", trained nothing,
# exported it again and ended with exit 0. Now: a fresh run beside another run's checkpoints is
# refused before any rank starts (naming --resume auto, a fresh --work-dir and --overwrite);
# --resume auto past max_steps is refused ("already trained"), at max_steps it says so; a resume
# under other settings says which; --overwrite removes the earlier run's checkpoints.
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
WD="$WORK/wd"
train() {  # train OUT ARGS...: mlp on synthetic data, one rank
  local out=$1; shift
  run_mtrain "$WORK/$out" launch --nproc-per-node 1 --master-port auto --model mlp --batch-size 8 \
    --set train.threads=1 --work-dir "$WD" "$@"
}
train a --max-steps 6
expect_rc 0 "the first run"
[ -d "$WD/checkpoints/step_6" ] && ok "its checkpoint step_6" || fail "no step_6: $(ls "$WD/checkpoints")"
before=$(md5sum <"$WD/model.pt")
runs_before=$(ls "$WD/runs" 2>/dev/null | wc -l)

train b --max-steps 3
expect_rc 2 "a fresh run beside it is refused"
expect_in "$WORK/b" "train.work_dir '$WD' holds another run's checkpoints (step_6)"
expect_in "$WORK/b" "(nothing was started)"
expect_in "$WORK/b" "--resume auto"
expect_in "$WORK/b" "a fresh --work-dir"
expect_in "$WORK/b" "--overwrite (checkpoint.overwrite: true)"
[ "$(md5sum <"$WD/model.pt")" = "$before" ] && ok "model.pt untouched" || fail "model.pt was overwritten"
[ "$(ls "$WD/runs" 2>/dev/null | wc -l)" -eq "$runs_before" ] && ok "no run folder" || fail "a run folder was made"

train c --max-steps 3 --resume auto
expect_rc 2 "resume auto past max_steps is refused"
expect_in "$WORK/c" "already trained: step 6 of max_steps 3"
expect_in "$WORK/c" "Raise --max-steps above 6"
expect_not_in "$WORK/c" "Iter(val)"
[ "$(md5sum <"$WD/model.pt")" = "$before" ] && ok "model.pt untouched" || fail "model.pt was exported again"

train d --max-steps 6 --resume auto
expect_rc 0 "resume auto at max_steps"
expect_in "$WORK/d" "already trained: step 6 of max_steps 6"
expect_in "$WORK/d" "only exported again"

train e --max-steps 8 --resume auto --set optim.lr=0.0123
expect_rc 0 "resume auto under other settings trains on"
expect_in "$WORK/e" "was saved by a run with other settings: train.max_steps 6 (now 8), optim.lr"
expect_in "$WORK/e" "(now 0.0123)"
expect_in "$WORK/e" "Iter(train) [8/8]"
[ -d "$WD/checkpoints/step_8" ] && ok "step_8 saved" || fail "no step_8"

train f --max-steps 3 --overwrite
expect_rc 0 "--overwrite starts afresh"
expect_in "$WORK/f" "checkpoint.overwrite: removed the earlier run's checkpoints"
ckpts=$(ls "$WD/checkpoints" | tr '\n' ' ')
[ "$ckpts" = "step_3 " ] && ok "only the new run's checkpoint is left" || fail "checkpoints: $ckpts"
train g --max-steps 3 --resume auto
expect_rc 0 "resume auto finds the new run's"
expect_in "$WORK/g" "already trained: step 3 of max_steps 3"
finish
