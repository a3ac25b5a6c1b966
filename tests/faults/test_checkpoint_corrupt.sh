#!/usr/bin/env bash
# Scenario: the newest checkpoint's shard is corrupted (a flipped byte) or truncated. Its
# checksum catches it: `checkpoint verify` fails naming the file; `--resume auto` warns, skips
# it and resumes from the previous valid checkpoint; nothing is lost beyond that step.
. "$(dirname "$0")/lib.sh"
need_verify
for damage in flip truncate; do
  wd=$WORK/$damage
  run_mtrain 300 "$WORK/$damage.train" launch $(trainer_args "$wd" --max-steps 4 --checkpoint-interval 2)
  expect_rc 0 "$damage: training writes step_2 and step_4"
  expect_file "$wd/checkpoints/step_4/COMPLETE" "$damage: step_4 complete"
  shard=$wd/checkpoints/step_4/shard_rank0.pt
  size=$(stat -c %s "$shard")
  if [ "$damage" = flip ]; then
    "$PY" -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2]^=0x5a; open(p,"wb").write(b)' "$shard"
  else
    truncate -s $((size / 2)) "$shard"
  fi
  run_mtrain 120 "$WORK/$damage.verify" checkpoint verify "$wd/checkpoints/step_4"
  expect_rc_not "$damage: verify of the damaged checkpoint"
  expect_in "$WORK/$damage.verify" "shard_rank0.pt"
  run_mtrain 120 "$WORK/$damage.verify2" checkpoint verify "$wd/checkpoints/step_2"
  expect_rc 0 "$damage: the previous checkpoint verifies"
  run_mtrain 300 "$WORK/$damage.resume" launch $(trainer_args "$wd" --max-steps 6 --checkpoint-interval 2 --resume auto)
  expect_rc 0 "$damage: --resume auto falls back"
  expect_in "$WORK/$damage.resume" "step_4"
  expect_in "$WORK/$damage.resume" "Resumed from $wd/checkpoints/step_2"
  expect_file "$wd/checkpoints/step_6/COMPLETE" "$damage: training went on to step_6"
  no_survivors
done
finish
