#!/usr/bin/env bash
# Scenario (issue 17 item 8): a job id is a name, never a path. `--job-id ../../../x --log-dir L`
# created folders outside L. Every way a job id arrives (--job-id, MTRAIN_JOB_ID, the Slurm
# default slurm-$SLURM_JOB_ID, --rdzv-id) is checked in one place: exit 2 with a paragraph,
# nothing created.
. "$(dirname "$0")/lib.sh"
mkdir -p "$WORK/a/b"
L=$WORK/a/b/logs
check() {  # WHAT OUT [env...] -- launch args
  local what=$1 out=$2; shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  timeout -k 5 20 env "MTRAIN_TEST_TAG=$TAG" "${envs[@]}" "$MTRAIN" launch --nproc-per-node 1 --master-port 0 \
    --log-dir "$L" "$@" -- sh -c 'echo ran' >"$out" 2>&1
  rc=$?
  expect_rc 2 "$what"
  expect_in "$out" "job id"
  grep -q "^\[.*\] ran" "$out" && fail "$what: no rank started" "none" "a rank ran" || ok "$what: no rank started" "none" "none"
}
check "--job-id ../../../x" "$WORK/o1" -- --job-id ../../../x
check "--job-id a/b" "$WORK/o2" -- --job-id a/b
check "--job-id .." "$WORK/o3" -- --job-id ..
check "--job-id ." "$WORK/o4" -- --job-id .
check "a 300-character --job-id" "$WORK/o5" -- --job-id "$(head -c 300 /dev/zero | tr '\0' x)"
check "MTRAIN_JOB_ID=../x" "$WORK/o6" MTRAIN_JOB_ID=../x --
check "Slurm default from SLURM_JOB_ID=../../x" "$WORK/o7" SLURM_JOB_ID=../../x \
  "SLURM_STEP_NODELIST=$(hostname)" SLURM_STEP_TASKS_PER_NODE=1 SLURM_STEP_NUM_TASKS=1 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_LOCALID=0 --
left=$(cd "$WORK" && find . -mindepth 1 -maxdepth 3 -type d ! -path ./a ! -path ./a/b | grep -v '^./a/b/logs$' | tr '\n' ' ')
[ -z "$left" ] && ok "no folder created outside the log dir" "none" "none" || fail "no folder created outside the log dir" "none" "$left"
run_mtrain 20 "$WORK/ok" launch --nproc-per-node 1 --master-port 0 --log-dir "$L" --job-id run-2026.11_a -- sh -c 'echo ran'
expect_rc 0 "a good job id (letters, digits, . _ -)"
no_survivors
finish
