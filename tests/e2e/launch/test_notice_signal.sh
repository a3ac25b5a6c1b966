#!/usr/bin/env bash
# SIGUSR1 to the launcher (Slurm's warning before the time limit or a preemption) reaches every
# rank; ranks then end on their own — a rank that ends first does not cut the others short while
# they save — and the launcher does not restart them.
. "$(dirname "$0")/../lib.sh"
# Any free port: the default 29500 may be taken on a shared machine (a busy port is tested elsewhere).
export MTRAIN_MASTER_PORT=auto
m="7$$.31"
# The launcher runs in the background so that the test can signal it; `bound` (lib.sh) SIGKILLs
# it if it outlives its time.
# Rank 0 ends at once on the notice (exit 138); rank 1 takes 1.5 s to "save" first.
prog='trap "on=1" USR1; on=0; touch "'"$WORK"'/up$RANK"; for i in $(seq 600); do
  if [ $on = 1 ]; then [ "$RANK" = 1 ] && sleep 1.5 && echo saved > "'"$WORK"'/saved$RANK"; exit 138; fi
  sleep 0.05; done; sleep '"$m"
"$MTRAIN" launch --nproc-per-node 2 --max-restarts 2 -- bash -c "$prog" >"$WORK/n" 2>&1 &
pid=$!
bound "$pid" 60
for _ in $(seq 100); do [ -e "$WORK/up0" ] && [ -e "$WORK/up1" ] && break; sleep 0.05; done
kill -USR1 "$pid"
wait "$pid"; rc=$?; kill "$watchdog" 2>/dev/null
expect_rc 138 "ranks ended by the notice → the rank's code, 138"
[ -e "$WORK/saved1" ] && ok "the slower rank finished saving" || { fail "rank 1 was cut short"; sed 's/^/    | /' "$WORK/n"; }
expect_in "$WORK/n" "ranks wound down after SIGUSR1; not restarting"
expect_not_in "$WORK/n" "restarting all ranks"
no_survivors "$m"

# A rank that does not end after the notice is torn down once the first one has ended and the
# notice grace (120 s by default) has passed — here it ends by itself well before, with exit 0.
prog2='trap "on=1" USR1; on=0; touch "'"$WORK"'/u$RANK"; for i in $(seq 600); do
  if [ $on = 1 ]; then exit 0; fi; sleep 0.05; done'
"$MTRAIN" launch --nproc-per-node 3 -- bash -c "$prog2" >"$WORK/z" 2>&1 &
pid=$!
bound "$pid" 60
for _ in $(seq 100); do [ -e "$WORK/u0" ] && [ -e "$WORK/u1" ] && [ -e "$WORK/u2" ] && break; sleep 0.05; done
kill -USR1 "$pid"
wait "$pid"; rc=$?; kill "$watchdog" 2>/dev/null
expect_rc 0 "every rank ended cleanly after the notice → 0"
finish
