#!/usr/bin/env bash
# Scenario (issue 17 item 6): a symlink planted where mtrain writes its temporary file. Before:
# `<path>.part` was opened with O_TRUNC, following the link: `ln -s victim shared/model.pt.part;
# mtrain checkpoint consolidate CKPT -o shared/model.pt` exited 0 with victim overwritten and
# model.pt a symlink to it. Now every part file is created O_EXCL|O_NOFOLLOW: a planted link is
# refused (saying what it is) and its target untouched; a stale part file of our own is
# replaced. A symlink at consolidate's destination itself is refused since issue 29 item 5
# (consolidate -o never replaces a device, FIFO or link), its target and the link untouched.
. "$(dirname "$0")/lib.sh"
need_verify
wd=$WORK/run
run_mtrain 300 "$WORK/train.out" launch $(trainer_args "$wd" --master-port 0 --max-steps 2 --checkpoint-interval 2)
expect_rc 0 "training writes step_2"
ck=$wd/checkpoints/step_2
mkdir -m 775 "$WORK/shared"
victim() { echo "precious $1" >"$WORK/victim$1.txt"; }
untouched() {  # N WHAT
  [ "$(cat "$WORK/victim$1.txt")" = "precious $1" ] && ok "$2" "unchanged" "unchanged" \
    || fail "$2" "unchanged" "$(head -c 60 "$WORK/victim$1.txt" | tr -c '[:print:]' '?')"
}
victim 1
ln -s "$WORK/victim1.txt" "$WORK/shared/model.pt.part"
run_mtrain 60 "$WORK/c1.out" checkpoint consolidate "$ck" -o "$WORK/shared/model.pt"
expect_rc_not "consolidate with a symlink planted at model.pt.part"
expect_in "$WORK/c1.out" "is a symbolic link"
untouched 1 "the planted link's target"
[ -L "$WORK/shared/model.pt" ] && fail "model.pt is not a symlink" "not a link" "a link" || ok "model.pt is not a symlink" "not a link" "not a link"

victim 2
ln -s "$WORK/victim2.txt" "$WORK/shared/model2.pt"
run_mtrain 60 "$WORK/c2.out" checkpoint consolidate "$ck" -o "$WORK/shared/model2.pt"
expect_rc_not "consolidate onto a symlink at the destination"
expect_in "$WORK/c2.out" "the path is a symbolic link to"
untouched 2 "the destination link's target"
[ -L "$WORK/shared/model2.pt" ] && ok "model2.pt is still the link" "a link" "a link" \
  || fail "model2.pt is still the link" "a link" "$(stat -c %F "$WORK/shared/model2.pt")"

echo "stale part of an earlier killed run" >"$WORK/shared/model3.pt.part"
run_mtrain 60 "$WORK/c3.out" checkpoint consolidate "$ck" -o "$WORK/shared/model3.pt"
expect_rc 0 "consolidate over our own stale part file"
[ ! -e "$WORK/shared/model3.pt.part" ] && ok "stale part replaced" "gone" "gone" || fail "stale part replaced" "gone" "left"

# The trainer's own outputs: model.pt at the end of training.
victim 3
ln -s "$WORK/victim3.txt" "$wd/model.pt.part"
run_mtrain 300 "$WORK/t2.out" launch $(trainer_args "$wd" --master-port 0 --max-steps 4 --resume auto)
expect_rc_not "training with a symlink planted at work_dir/model.pt.part"
expect_in "$WORK/t2.out" "is a symbolic link"
untouched 3 "the trainer's planted link's target"
no_survivors
finish
