#!/usr/bin/env bash
# Scenario (issue 17, also): a checkpoint's shard replaced by a FIFO or by a symlink. Before:
# `checkpoint verify` said "the shard file is missing (Operation not supported)". Now it says
# what is there (a FIFO, a symbolic link and its target), never opens a FIFO (which would block),
# and --resume auto falls back to the previous checkpoint.
. "$(dirname "$0")/lib.sh"
need_verify
wd=$WORK/run
run_mtrain 300 "$WORK/train.out" launch $(trainer_args "$wd" --master-port 0 --max-steps 4 --checkpoint-interval 2)
expect_rc 0 "training writes step_2 and step_4"
shard=$wd/checkpoints/step_4/shard_rank0.pt
mv "$shard" "$WORK/real_shard.pt"
mkfifo "$shard"
run_mtrain 30 "$WORK/fifo.out" checkpoint verify "$wd/checkpoints/step_4"
expect_rc_not "verify with a FIFO for a shard"
expect_in "$WORK/fifo.out" "is a FIFO (named pipe)"
rm -f "$shard"; ln -s "$WORK/real_shard.pt" "$shard"
run_mtrain 30 "$WORK/link.out" checkpoint verify "$wd/checkpoints/step_4"
expect_rc_not "verify with a symlinked shard"
expect_in "$WORK/link.out" "is a symbolic link to $WORK/real_shard.pt"
run_mtrain 300 "$WORK/resume.out" launch $(trainer_args "$wd" --master-port 0 --max-steps 6 --checkpoint-interval 2 --resume auto)
expect_rc 0 "--resume auto falls back"
expect_in "$WORK/resume.out" "Resumed from $wd/checkpoints/step_2"
no_survivors
finish
