#!/usr/bin/env bash
# Scenario (issue 40 item 5): every writer checks its writes. Before: `checkpoint consolidate -o
# /dev/full` and `config import -o /dev/full` said "wrote …" and exited 0; `checkpoint
# inspect`/`verify`, `config export`, `config show`, `estimate` and `env` with standard output on
# /dev/full exited 0 with nothing written. Now each exits non-zero with a message naming the path
# ("standard output" for stdout). /dev/full fails every write with ENOSPC, as a full disk does.
. "$(dirname "$0")/lib.sh"
[ -w /dev/full ] || skip "no writable /dev/full"

# stdout_full OUTFILE ARGS...: mtrain with standard output on /dev/full, stderr to OUTFILE.
stdout_full() {
  local out=$1; shift
  timeout -k "$KILL_AFTER" 120 env MTRAIN_TEST_TAG="$TAG" "$MTRAIN" "$@" >/dev/full 2>"$out"
  rc=$?
}

cat >"$WORK/ds.json" <<'JSON'
{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}, "bf16": {"enabled": true}}
JSON
printf 'model:\n  name: mlp\nstrategy: zero2\n' >"$WORK/job.yaml"

stdout_full "$WORK/import.out" config import "$WORK/ds.json"
expect_rc 1 "config import > /dev/full"
expect_in "$WORK/import.out" "cannot write to standard output"
run_mtrain 60 "$WORK/import-o.out" config import "$WORK/ds.json" -o /dev/full --force
expect_rc 1 "config import -o /dev/full"
expect_in "$WORK/import-o.out" "cannot write /dev/full: No space left on device"
[ -c /dev/full ] && ok "/dev/full is still the device" "character device" "character device" \
  || fail "/dev/full is still the device" "character device" "$(stat -c %F /dev/full)"

stdout_full "$WORK/export.out" config export "$WORK/job.yaml" --to deepspeed
expect_rc 1 "config export > /dev/full"
expect_in "$WORK/export.out" "cannot write to standard output"
run_mtrain 60 "$WORK/export-o.out" config export "$WORK/job.yaml" --to accelerate -o /dev/full --force
expect_rc 1 "config export -o /dev/full"
expect_in "$WORK/export-o.out" "cannot write /dev/full"

stdout_full "$WORK/show.out" config show --config "$WORK/job.yaml"
expect_rc 1 "config show > /dev/full"
expect_in "$WORK/show.out" "cannot write to standard output"

stdout_full "$WORK/est.out" estimate --model mlp --nproc-per-node 1 --device-memory 1GiB
expect_rc 1 "estimate > /dev/full"
expect_in "$WORK/est.out" "cannot write to standard output"
# `mtrain env` exited 0 with its report lost (issue 41 item 8, found moving the write out of the command).
stdout_full "$WORK/env.out" env
expect_rc 1 "env > /dev/full"
expect_in "$WORK/env.out" "cannot write to standard output"
# `mtrain slurm script` printed the sbatch script unchecked: exit 0 with the script lost.
stdout_full "$WORK/slurm.out" slurm script --nodes 1 --gpus-per-node 1 --job-name wfull -- "$WORK/train.py"
expect_rc 1 "slurm script > /dev/full"
expect_in "$WORK/slurm.out" "cannot write to standard output"

# The checkpoint tools run in mtrain-worker (a LibTorch build).
[ -x "$WORKER" ] || { echo "note: no mtrain-worker in $MTRAIN_BIN_DIR: the checkpoint writers are not checked"; finish; exit; }
wd=$WORK/run
run_mtrain 300 "$WORK/train.out" launch $(trainer_args "$wd" --master-port 0 --max-steps 2 --checkpoint-interval 2)
expect_rc 0 "training writes step_2"
ck=$wd/checkpoints/step_2
stdout_full "$WORK/inspect.out" checkpoint inspect "$ck"
expect_rc 1 "checkpoint inspect > /dev/full"
expect_in "$WORK/inspect.out" "cannot write to standard output"
stdout_full "$WORK/verify.out" checkpoint verify "$ck"
expect_rc 1 "checkpoint verify > /dev/full"
expect_in "$WORK/verify.out" "cannot write to standard output"
run_mtrain 120 "$WORK/cons.out" checkpoint consolidate "$ck" -o /dev/full
expect_rc_not "checkpoint consolidate -o /dev/full"
expect_in "$WORK/cons.out" "/dev/full"
stdout_full "$WORK/cons2.out" checkpoint consolidate "$ck" -o "$WORK/model.pt"
expect_rc 1 "checkpoint consolidate > /dev/full (its 'wrote' line)"
expect_in "$WORK/cons2.out" "cannot write to standard output"
finish
