#!/usr/bin/env bash
# Checks before launch: a job that cannot train is refused by the launcher with exit 2 and one
# paragraph, before any rank starts (no rank output, no work dir created).
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"

# refused NAME EXPECTED ARGS...: exit 2, EXPECTED in the paragraph, nothing started.
refused() {
  local name=$1 expected=$2; shift 2
  local wd=$WORK/wd_$name
  run_mtrain "$WORK/$name" launch --master-port 0 --work-dir "$wd" --max-steps 2 "$@"  # absent nproc: 1 rank
  expect_rc 2 "$name is refused"
  expect_in "$WORK/$name" "$expected"
  expect_not_in "$WORK/$name" "Iter(train)"
  [ ! -e "$wd" ] && ok "$name: no work dir was created" || fail "$name: $wd exists (something started)"
  [ "$(grep -c . "$WORK/$name")" -le 3 ] && ok "$name: one paragraph" || { fail "$name: more than a paragraph"; cat "$WORK/$name"; }
}

refused model_data "which model 'resnet18' cannot learn" --model resnet18 --data text
refused gpt_cifar "which model 'gpt' cannot learn" --model gpt --data cifar10 --data-path "$WORK"
refused data_missing "data.path '$WORK/none.txt' does not exist" --model gpt --data-path "$WORK/none.txt"
mkdir -p "$WORK/cifar"
refused cifar_files "lacks files of CIFAR-10" --model resnet18 --data cifar10 --data-path "$WORK/cifar"
touch "$WORK/afile"
run_mtrain "$WORK/workdir" launch --nproc-per-node 1 --master-port 0 --work-dir "$WORK/afile/wd" --max-steps 2 --model mlp
expect_rc 2 "a work dir under a file is refused"
expect_in "$WORK/workdir" "train.work_dir '$WORK/afile/wd' cannot be created"
if [ "$(id -u)" -ne 0 ]; then
  mkdir -p "$WORK/ro" && chmod 555 "$WORK/ro"
  run_mtrain "$WORK/workdir_ro" launch --nproc-per-node 1 --master-port 0 --work-dir "$WORK/ro/wd" --max-steps 2 --model mlp
  expect_rc 2 "a work dir in a read-only folder is refused"
  expect_in "$WORK/workdir_ro" "not writable by you"
fi
# The planned world (2 ranks) cannot split a global batch of 12 into micro-batches of 4: known only
# once `cpu` is counted, so the launcher (not the settings check) finds it.
world=$("$MTRAIN" launch --nproc-per-node cpu --dry-run --format json --model mlp 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["world_size"])')
gb=$((4 * (world + 1)))
refused global_batch "world size $world is $((4 * world))" --nproc-per-node cpu --model mlp --batch-size 4 --global-batch-size "$gb"
mkdir -p "$WORK/ckpt/step_3" && echo '{}' >"$WORK/ckpt/step_3/manifest.json"
refused resume_incomplete "holds no complete checkpoint (COMPLETE is missing" --model mlp --resume "$WORK/ckpt/step_3"
refused resume_root "is a folder of checkpoints, not one checkpoint" --model mlp --resume "$WORK/ckpt"
refused resume_missing "--resume '$WORK/nope' does not exist" --model mlp --resume "$WORK/nope"
# Several problems: all named in one go.
run_mtrain "$WORK/several" launch --nproc-per-node 1 --master-port 0 --work-dir "$WORK/wd_several" --model gpt \
  --data-path "$WORK/none.txt" --resume "$WORK/nope"
expect_rc 2 "several problems"
expect_in "$WORK/several" "the job cannot start (nothing was started)"
expect_in "$WORK/several" "--resume '$WORK/nope'"
expect_in "$WORK/several" "data.path '$WORK/none.txt'"
# A good job still runs.
run_mtrain "$WORK/good" launch --nproc-per-node 1 --master-port 0 --work-dir "$WORK/wd_good" --max-steps 2 --model mlp
expect_rc 0 "a valid job runs"
finish
