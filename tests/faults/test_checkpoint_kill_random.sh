#!/usr/bin/env bash
# Scenario: every process of the job is SIGKILLed at a random moment while a checkpoint is
# being written, TRIALS times (default 50) on one work dir. After each kill, every complete
# checkpoint verifies, the newest complete one is never older than before the trial, and the
# next trial resumes from it (--resume auto); at the end a run completes from there.
. "$(dirname "$0")/lib.sh"
need_verify
trials=${MTRAIN_FAULTS_TRIALS:-50}
wd=$WORK/run
args() { trainer_args "$wd" --max-steps 100000 --checkpoint-interval 1 --keep-checkpoints 3 "$@"; }
"$MTRAIN" launch --help | grep -q -- --keep-checkpoints || args() { trainer_args "$wd" --max-steps 100000 --checkpoint-interval 1 "$@"; }
prev_step=0 bad=0 hit=0
for ((t = 1; t <= trials; t++)); do
  resume=(); [ -n "$(newest_checkpoint "$wd")" ] && resume=(--resume auto)
  "${tagged[@]}" "$MTRAIN" launch $(args) "${resume[@]}" >"$WORK/trial.out" 2>&1 &
  launcher=$!
  # Wait until a checkpoint is being written (its .tmp folder exists), then a random delay.
  for ((i = 0; i < 3000; i++)); do
    compgen -G "$wd/checkpoints/.tmp_step_*" >/dev/null && break
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.005
  done
  compgen -G "$wd/checkpoints/.tmp_step_*" >/dev/null && hit=$((hit + 1))
  sleep "0.0$((RANDOM % 60))"
  kill_tagged KILL
  wait "$launcher" 2>/dev/null
  wait_for 10 test -z "$(tagged_pids)"
  newest=$(newest_checkpoint "$wd")
  step=${newest##*step_}; step=${step:-0}
  if [ "$step" -lt "$prev_step" ]; then
    bad=$((bad + 1)); echo "trial $t: newest complete checkpoint went back from $prev_step to $step"
  fi
  for d in $(complete_checkpoints "$wd"); do
    if ! timeout 120 "$MTRAIN" checkpoint verify "$d" >"$WORK/verify.out" 2>&1; then
      bad=$((bad + 1)); echo "trial $t: $d does not verify:"; sed 's/^/    | /' "$WORK/verify.out"
    fi
  done
  if [ ${#resume[@]} -gt 0 ] && grep -qiE "error|not a valid|damaged" "$WORK/trial.out" && ! grep -q "Iter(train)" "$WORK/trial.out"; then
    bad=$((bad + 1)); echo "trial $t: resume failed:"; tail -5 "$WORK/trial.out" | sed 's/^/    | /'
  fi
  prev_step=$step
done
[ "$bad" -eq 0 ] && ok "$trials kill trials: every complete checkpoint verifies and resumes" "0 bad" "0 bad; $hit kills during a write; newest step $prev_step" \
  || fail "$trials kill trials: every complete checkpoint verifies and resumes" "0 bad" "$bad bad of $trials"
[ "$hit" -gt 0 ] && ok "some kills landed during a checkpoint write" "> 0" "$hit" || fail "some kills landed during a checkpoint write" "> 0" "0"
[ "$prev_step" -gt 0 ] && ok "progress survives the kills" "> 0" "step $prev_step" || fail "progress survives the kills" "> 0" "0"
run_mtrain 300 "$WORK/final.out" launch $(trainer_args "$wd" --max-steps $((prev_step + 2)) --checkpoint-interval 1 --resume auto)
expect_rc 0 "final run resumes from step $prev_step and completes"
no_survivors
finish
