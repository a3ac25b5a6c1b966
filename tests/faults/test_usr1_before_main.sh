#!/usr/bin/env bash
# Scenario (issue 17 item 11, the start of the launcher's life): a notice (SIGUSR1/USR2, Slurm's
# --signal) that arrives while `mtrain launch` is still starting — its libraries' constructors
# and static initialisers, before `main` — killed it (exit 138: nothing of it was running yet to
# ignore the signal). The notices are sent from inside the launcher process at that very moment,
# deterministically: a preloaded library's constructor raises them (glibc runs the executable's
# .preinit_array before any library constructor, and those before `main`). Expected: the job's
# own exit code, the launcher says the notice found no rank to tell.
# Also: `mtrain launch --launcher slurm-task` execs the program in place; it must start with
# USR1/USR2 neither ignored nor blocked and SIGPIPE not ignored, as under srun itself.
. "$(dirname "$0")/lib.sh"
CC=$(command -v cc || command -v gcc) || skip "no C compiler to build the preloaded library"
cat >"$WORK/early.c" <<'EOF'
#include <signal.h>
#include <stdlib.h>
#include <string.h>
/* Runs in the launcher before main; only there (the ranks must not inherit it). */
__attribute__((constructor)) static void notices_before_main(void) {
  const char* what = getenv("EARLY_SIGNALS");
  unsetenv("LD_PRELOAD");
  if (!what) return;
  for (int i = 0; i < 3; ++i) raise(SIGUSR1);
  if (strcmp(what, "both") == 0) raise(SIGUSR2);
}
EOF
"$CC" -shared -fPIC -o "$WORK/early.so" "$WORK/early.c" || skip "cannot build the preloaded library"

for what in usr1 both; do
  timeout -k 5 30 env MTRAIN_TEST_TAG="$TAG" EARLY_SIGNALS=$what LD_PRELOAD="$WORK/early.so" \
    "$MTRAIN" launch --nproc-per-node 2 --master-port 0 -- sh -c 'exit 0' >"$WORK/out_$what" 2>&1
  rc=$?
  expect_rc 0 "notices ($what) raised before main, job exits 0"
  expect_in "$WORK/out_$what" "SIGUSR1 arrived before any rank started"
done
expect_in "$WORK/out_both" "SIGUSR2 arrived before any rank started"
# The job's own code still comes through, and a notice during the run is still passed on.
timeout -k 5 30 env MTRAIN_TEST_TAG="$TAG" EARLY_SIGNALS=usr1 LD_PRELOAD="$WORK/early.so" \
  "$MTRAIN" launch --nproc-per-node 2 --master-port 0 -- sh -c 'exit 5' >"$WORK/out_5" 2>&1
rc=$?
expect_rc 5 "notice before main, job exits 5"
M=$WORK/mark "${tagged[@]}" "$MTRAIN" launch --nproc-per-node 1 --master-port 0 -- \
  sh -c 'trap "echo rank got USR1; exit 0" USR1; touch "$M"; for i in $(seq 100); do sleep 0.1; done; exit 9' \
  >"$WORK/out_fwd" 2>&1 &
launcher=$!
wait_for 10 test -e "$WORK/mark"
kill -USR1 "$launcher"
wait "$launcher"; rc=$?
expect_rc 0 "a notice while the rank runs is passed on; the rank exits 0"
expect_in "$WORK/out_fwd" "rank got USR1"

# slurm-task: the exec'd program's dispositions and mask (bits of /proc/self/status, hex).
timeout -k 5 30 env MTRAIN_TEST_TAG="$TAG" SLURM_JOB_ID=77 SLURM_JOB_NODELIST=localhost SLURM_NTASKS=1 \
  SLURM_NODEID=0 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_TASKS_PER_NODE=1 \
  "$MTRAIN" launch --launcher slurm-task -- sh -c 'grep -E "^Sig(Blk|Ign)" /proc/self/status' >"$WORK/out_task" 2>&1
rc=$?
expect_rc 0 "slurm-task program"
$PY - "$WORK/out_task" <<'EOF' >"$WORK/task_check"
import sys
masks = dict(l.split(":") for l in open(sys.argv[1]) if l.startswith("Sig"))
bad = []
for name, sig in (("USR1", 10), ("USR2", 12), ("PIPE", 13)):
    for field in ("SigIgn", "SigBlk"):
        if int(masks[field].strip(), 16) >> (sig - 1) & 1:
            bad.append(f"{name} in {field}")
print(", ".join(bad) or "none")
EOF
[ "$(cat "$WORK/task_check")" = none ] \
  && ok "slurm-task program starts with USR1/USR2/PIPE neither ignored nor blocked" "none" "none" \
  || fail "slurm-task program starts with USR1/USR2/PIPE neither ignored nor blocked" "none" "$(cat "$WORK/task_check") ($(tr '\n' ' ' <"$WORK/out_task"))"
no_survivors
finish
