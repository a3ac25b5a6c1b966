#!/usr/bin/env bash
# Scenario: the launcher is SIGTERMed (Slurm preemption, Ctrl-C, a scheduler). Every rank gets
# SIGTERM and may finish its work; the launcher exits 128+15. With the bundled trainer (once
# preemption is in mtrain-worker) the ranks write a checkpoint that then resumes.
. "$(dirname "$0")/lib.sh"
"${tagged[@]}" "$MTRAIN" launch --nproc-per-node 2 --grace-period 10 -- bash -c \
  'trap "echo rank $RANK got TERM; exit 0" TERM; echo "rank $RANK up"; sleep 300 & wait' >"$WORK/out" 2>&1 &
launcher=$!
wait_for 20 grep -q "rank 1 up" "$WORK/out" && wait_for 5 grep -q "rank 0 up" "$WORK/out"
kill -TERM "$launcher"
timeout 30 tail --pid="$launcher" -f /dev/null
wait "$launcher"; rc=$?
expect_rc 143 "launcher SIGTERMed, program ranks"
expect_in "$WORK/out" "rank 0 got TERM"
expect_in "$WORK/out" "rank 1 got TERM"
no_survivors

# The bundled trainer: SIGTERM → agreed checkpoint at the end of the step → exit 143 → resume.
[ -x "$WORKER" ] || { echo "bundled-trainer part: no mtrain-worker in this build"; record "bundled trainer" "" "no mtrain-worker" SKIP; finish; exit; }
grep -aqF "preempted by" "$WORKER" || { echo "bundled-trainer part: mtrain-worker has no preemption yet"; record "bundled trainer" "" "no preemption in mtrain-worker" SKIP; finish; exit; }
wd=$WORK/train
"${tagged[@]}" "$MTRAIN" launch $(trainer_args "$wd" --max-steps 100000 --grace-period 60) >"$WORK/train.out" 2>&1 &
launcher=$!
wait_for 120 grep -q "Iter(train)" "$WORK/train.out" || fail "trainer logs a step" "a step line" "none in 120 s"
kill -TERM "$launcher"
timeout 120 tail --pid="$launcher" -f /dev/null
wait "$launcher"; rc=$?
expect_rc 143 "launcher SIGTERMed, bundled trainer"
expect_in "$WORK/train.out" "preempted by SIGTERM"
ckpt=$(ls -d "$wd"/checkpoints/step_* 2>/dev/null | sort -t_ -k2 -n | tail -1)
expect_file "${ckpt:-$wd/checkpoints/none}/COMPLETE" "preemption checkpoint complete"
no_survivors
step=${ckpt##*step_}
run_mtrain 300 "$WORK/resume.out" launch $(trainer_args "$wd" --max-steps $((step + 2)) --resume auto)
expect_rc 0 "resume from the preemption checkpoint"
expect_in "$WORK/resume.out" "Resumed from $ckpt"
no_survivors
finish
