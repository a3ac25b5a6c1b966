#!/usr/bin/env bash
# Scenario (issue 17 item 11): SIGUSR1 (Slurm's notice) arriving at any moment of the
# launcher's life. Near the end of a job the launcher's handlers were torn down and the default
# action (terminate, exit 138) came back. A 1-s job under a USR1 storm, several trials: every
# trial ends 0 (the ranks ignore USR1 and finish).
. "$(dirname "$0")/lib.sh"
trials=${MTRAIN_FAULTS_USR1_TRIALS:-6}
bad=0; codes=""
for ((t = 1; t <= trials; t++)); do
  M=$WORK/m$t "${tagged[@]}" "$MTRAIN" launch --nproc-per-node 2 --master-port 0 -- sh -c 'trap "" USR1; touch "$M.$RANK"; sleep 1' \
    >"$WORK/out$t" 2>&1 &
  launcher=$!
  # The storm begins once both ranks ignore USR1 (a rank killed by it would be a fair 138).
  wait_for 10 test -e "$WORK/m$t.0" -a -e "$WORK/m$t.1"
  signal_storm "$launcher" SIGUSR1 0.001
  storm=$!
  wait "$launcher"; rc=$?
  kill "$storm" 2>/dev/null; wait "$storm" 2>/dev/null
  codes="$codes $rc"
  [ "$rc" = 0 ] || bad=$((bad + 1))
done
[ "$bad" = 0 ] && ok "$trials trials of a 1-s job under a USR1 storm end 0" "all 0" "exit codes:$codes" \
  || fail "$trials trials of a 1-s job under a USR1 storm end 0" "all 0" "exit codes:$codes"
no_survivors
finish
