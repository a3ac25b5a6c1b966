#!/usr/bin/env bash
# Scenario: every process of the job is SIGKILLed at a random moment while a checkpoint is
# being written, TRIALS times (default 50) on one work dir. After each kill, every complete
# checkpoint verifies, the newest complete one is never older than before the trial, and the
# next trial resumes from it (--resume auto: its output names the checkpoint); at the end a run
# completes from there. Verification is `mtrain checkpoint verify` (checksums) where it exists;
# before that, every trial's resume is the load check.
. "$(dirname "$0")/lib.sh"
need_worker
trials=${MTRAIN_FAULTS_TRIALS:-50}
wd=$WORK/run
# --master-port 0: a free port each trial, since this scenario runs beside other tests.
args() { trainer_args "$wd" --max-steps 100000 --checkpoint-interval 1 --master-port 0 "$@"; }
prev_step=0 prev_dir="" bad=0 hit=0 resumed=0
for ((t = 1; t <= trials; t++)); do
  resume=(); [ -n "$(newest_checkpoint "$wd")" ] && resume=(--resume auto)
  "${tagged[@]}" "$MTRAIN" launch $(args) "${resume[@]}" >"$WORK/trial$t.out" 2>&1 &
  launcher=$!
  # Once the job is saving (checkpoint every step, so it nearly always is), a random delay,
  # then SIGKILL to every process of the job at once. A hit: a .tmp_step_* of this trial exists.
  touch "$WORK/start"
  wait_for 120 grep -qs "Saving checkpoint" "$WORK/trial$t.out" || echo "trial $t: no checkpoint started within 120 s (launcher $(kill -0 $launcher 2>/dev/null && echo alive || echo gone))"
  sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
  [ -n "$(find "$wd/checkpoints" -maxdepth 1 -name '.tmp_step_*' -newer "$WORK/start" 2>/dev/null)" ] && hit=$((hit + 1))
  kill_tagged KILL
  wait "$launcher" 2>/dev/null
  wait_for 10 test -z "$(tagged_pids)"
  newest=$(newest_checkpoint "$wd")
  step=${newest##*step_}; step=${step:-0}
  if [ "$step" -lt "$prev_step" ]; then
    bad=$((bad + 1)); echo "trial $t: newest complete checkpoint went back from $prev_step to $step"
  fi
  if has_verify; then
    for d in $(complete_checkpoints "$wd"); do
      if ! loads_ok "$d" "$WORK/verify.out"; then
        bad=$((bad + 1)); echo "trial $t: $d does not verify:"; sed 's/^/    | /' "$WORK/verify.out"
      fi
    done
  fi
  if [ -n "$prev_dir" ]; then
    if grep -qF "Resumed from $prev_dir" "$WORK/trial$t.out"; then resumed=$((resumed + 1))
    else bad=$((bad + 1)); echo "trial $t: did not resume from $prev_dir ($(wc -l <"$WORK/trial$t.out") lines):"; grep -i -E "resum|warn|skip|error|damaged|checkpoint" "$WORK/trial$t.out" | grep -v "Saving checkpoint" | head -12 | sed 's/^/    | /'; fi
  fi
  prev_step=$step prev_dir=$newest
done
[ "$bad" -eq 0 ] && ok "$trials kill trials: every complete checkpoint verifies and resumes" "0 bad" "0 bad; $hit kills during a write; $resumed resumes; newest step $prev_step" \
  || fail "$trials kill trials: every complete checkpoint verifies and resumes" "0 bad" "$bad bad of $trials"
[ "$hit" -gt 0 ] && ok "some kills landed during a checkpoint write" "> 0" "$hit" || fail "some kills landed during a checkpoint write" "> 0" "0"
[ "$prev_step" -gt 0 ] && ok "progress survives the kills" "> 0" "step $prev_step" || fail "progress survives the kills" "> 0" "0"
if [ -n "$prev_dir" ]; then
  loads_ok "$prev_dir" "$WORK/final-load.out" && ok "newest checkpoint loads" "loads" "loads" \
    || fail "newest checkpoint loads" "loads" "$(tail -3 "$WORK/final-load.out")"
fi
run_mtrain 300 "$WORK/final.out" launch $(trainer_args "$wd" --max-steps $((prev_step + 2)) --checkpoint-interval 1 --master-port 0 --resume auto)
expect_rc 0 "final run resumes from step $prev_step and completes"
expect_in "$WORK/final.out" "Resumed from $prev_dir"
stale=$(find "$wd/checkpoints" -maxdepth 1 -name '.tmp_step_*')
[ -z "$stale" ] && ok "no partial .tmp_step_* left after a completed run" "none" "none" \
  || fail "no partial .tmp_step_* left after a completed run" "none" "$(echo $stale | wc -w) left"
no_survivors
finish
