#!/usr/bin/env bash
# Fast detection under dynamic rendezvous on loopback (issue 16 item 2): three node agents
# (`--nnodes 2:3 --max-restarts 3`, one rank each) of the bundled trainer, comm.timeout_s 6
# (below the launcher's 10 s watch for a SIGSTOPped rank, so that the collective timeout is what
# fires), --node-timeout 3, --grace-period 5 (see GRACE). Each case breaks the job mid-run and
# checks that the round stops and re-forms within a bound (printed, with margin for a busy
# 2-core machine), that the job still finishes its steps, that no process of the job survives
# and that no shared-memory segment of its ranks (/dev/shm/mtrain-ar-<pid>-…) is left.
#   1. a rank hung in a collective (SIGSTOP): its peers give up after comm.timeout_s, the job
#      re-forms with all three nodes (the hung rank's agent stops it: SIGCONT + SIGTERM, SIGKILL
#      after the grace period);
#   2. one node (its ranks reduce in /dev/shm), --max-restarts 2: a rank hung (SIGSTOP), then a
#      rank SIGKILLed while its peers wait in a shared-memory collective: the attempt stops
#      after comm.timeout_s, then at once (the peers see the pid gone), and the launcher restarts;
#   3. a whole node frozen (its agent and its rank SIGSTOPped: connections stay open), then one
#      SIGKILLed, while two busy loops load both cores: the store misses its heartbeats for
#      --node-timeout and opens a new round, the survivors' agents stop their ranks at once
#      (never waiting for the collective timeout) and the job finishes on 2 nodes.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/elastic_lib.sh"
export MTRAIN_RDZV_TOKEN=elastic-detect-0123456789abcdef
STEPS=40
COMM_TIMEOUT=6
# --grace-period 5, longer than --node-timeout 3: a survivor's rank stuck in a collective with a
# vanished peer needs the SIGKILL after it, and its agent must keep heart-beating meanwhile or
# the store takes the survivor for dead too and the job never re-forms (the 3-node Slurm hang).
GRACE=${DETECT_GRACE:-5}
job=("${tiny_job[@]}" --max-steps $STEPS --global-batch-size 12 --set train.log_interval=1
     --set comm.timeout_s=$COMM_TIMEOUT)
# start_node TAG K: node agent nK (one rank) in the background; `timeout` gives it its own
# process group (pgid = $agentK), output in $WORK/TAG.nodeK.
start_node() {
  timeout -k 5 240 "$MTRAIN" launch --rdzv-backend mtrain --rdzv-endpoint "127.0.0.1:$RDZV_PORT" \
    --nnodes 2:3 --max-restarts 3 --rdzv-id "detect-$1" --node-name "n$2" --rdzv-last-call 3 \
    --node-timeout 3 --rdzv-timeout 60 --master-port "$MASTER_PORT" --nproc-per-node 1 --grace-period "$GRACE" \
    "${job[@]}" --work-dir "$WORK/$1" >"$WORK/$1.node$2" 2>&1 &
  eval "agent$2=\$!"
}
rank_of() { pgrep -f "mtrain-worker --job $WORK" -P "$(pgrep -P "$1" | head -1)" | head -1; }  # agent's rank
# Every pid the ranks of this test had, recorded in the background (shared-memory names carry
# rank 0's pid).
( while :; do pgrep -f "mtrain-worker --job $WORK" >>"$WORK/rank-pids"; sleep 0.3; done ) &
recorder=$!

# run_case TAG: three nodes, trained past the first checkpoint; the caller breaks something.
start_case() {
  RDZV_PORT=$(free_port); MASTER_PORT=$(free_port)
  start_node "$1" 0
  wait_for "$WORK/$1.node0" "listening on" 10 || fail "$1: node 0 holds the store"
  start_node "$1" 1
  start_node "$1" 2
  wait_for "$WORK/$1.node0" "Iter\(train\) \[ *7/" 120 && ok "$1: 3 nodes trained past the checkpoint at step 5" \
    || { fail "$1: training did not reach step 7"; sed 's/^/    | /' "$WORK/$1.node0"; }
}
# end_case TAG SURVIVORS: the survivors exit 0 having finished the steps; nothing survives.
end_case() {
  local rcs="" want=""
  for k in $2; do eval "wait \$agent$k"; rcs="$rcs $?"; want="$want 0"; done
  [ "$rcs" = "$want" ] && ok "$1: nodes $2 finished (exit$rcs)" \
    || { fail "$1: exit codes$rcs"; for k in 0 1 2; do sed "s/^/    n$k | /" "$WORK/$1.node$k"; done; }
  "$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["steps"]==int(sys.argv[2]), s' \
    "$(find "$WORK/$1" -name summary.json | head -1)" "$STEPS" && ok "$1: the job finished its $STEPS steps" \
    || fail "$1: no summary with $STEPS steps"
}
# restart_seen TAG K: seconds from $t_event until node K printed that the job restarts.
restart_after() {
  wait_for "$WORK/$1.node$2" "joining again" "$3" || { echo 999; return; }
  echo "$(now) - $t_event" | bc
}

# DETECT_CASES="hung shm frozen nodekill" (the default) selects the cases.
want() { [[ " ${DETECT_CASES:-hung shm frozen nodekill} " == *" $1 "* ]]; }

# --- 1. a rank hung in a collective --------------------------------------------------------------
if want hung; then
start_case hung
victim=$(rank_of "$agent2")
[ -n "$victim" ] && ok "hung: found n2's rank (pid $victim)" || fail "hung: n2's rank not found"
kill -STOP "$victim"; t_event=$(now)
dt=$(restart_after hung 0 60)
within $((COMM_TIMEOUT + 10)) "hung: n0's agent stopped the round after n2's rank hung" "$dt"
grep -m1 -oE "the job restarts \(.*" "$WORK/hung.node0" | sed 's/^/    /'
wait_for "$WORK/hung.node0" "node n0 is node 0 of 3 .*restart 1" 30 && dt=$(echo "$(now) - $t_event" | bc) \
  && within $((COMM_TIMEOUT + 15)) "hung: the new round formed with all 3 nodes" "$dt" \
  || fail "hung: no 3-node round after the hang"
[ -e "/proc/$victim" ] && fail "hung: the hung rank $victim is still there" || ok "hung: the hung rank is gone"
end_case hung "0 1 2"
fi

# --- 2. one node, shared-memory collectives: a rank hung, then a rank SIGKILLed --------------------
if want shm; then
# The ranks of a single node reduce in /dev/shm (lib/trainer/comm/shm_collectives.hpp); the
# launcher restarts the attempt itself (--max-restarts 2).
# A step takes milliseconds here: 600 steps, a checkpoint every 50.
shm_job=("${job[@]}")
for i in "${!shm_job[@]}"; do
  case "${shm_job[$i]}" in --max-steps) shm_job[$((i + 1))]=600 ;; --checkpoint-interval) shm_job[$((i + 1))]=50 ;; esac
done
timeout -k 5 240 "$MTRAIN" launch --nproc-per-node 3 --master-port 0 --max-restarts 2 --grace-period 2 --grad-accum 2 \
  "${shm_job[@]}" --work-dir "$WORK/shm" >"$WORK/shm.out" 2>&1 &
single=$!
launcher() { pgrep -P "$single" | head -1; }
wait_for "$WORK/shm.out" "Iter\(train\) \[ *60/" 120 && ok "shm: 3 local ranks trained past step 60" \
  || { fail "shm: training did not reach step 60"; sed 's/^/    | /' "$WORK/shm.out"; }
expect_in "$WORK/shm.out" "fp32 collectives in shared memory"
# One node trains a step in milliseconds: every rank is paused first so that the break comes
# mid-run, then all but the victim go on.
ranks=$(pgrep -f "mtrain-worker --job $WORK" -P "$(launcher)")
kill -STOP $ranks
victim=$(echo "$ranks" | sed -n 2p)
[ -n "$victim" ] || { fail "shm: no rank to stop"; kill -- "-$single"; finish; }
kill -CONT $(echo "$ranks" | grep -vx "$victim"); t_event=$(now)
wait_for "$WORK/shm.out" "attempt 0 failed" 60 && dt=$(echo "$(now) - $t_event" | bc) || dt=999
within $((COMM_TIMEOUT + 10)) "shm: a rank hung in a shared-memory collective (SIGSTOP) stopped the attempt" "$dt"
grep -m1 -oE "attempt 0 failed: .*restarting" "$WORK/shm.out" | sed 's/^/    /'
wait_for "$WORK/shm.out" "Resumed from" 60 || fail "shm: attempt 2 did not resume"
ranks=$(pgrep -f "mtrain-worker --job $WORK" -P "$(launcher)")
kill -STOP $ranks
victim=$(echo "$ranks" | sed -n 3p)
[ -n "$victim" ] || { fail "shm: no rank to kill"; kill -- "-$single"; finish; }
kill -KILL "$victim"
kill -CONT $(echo "$ranks" | grep -vx "$victim"); t_event=$(now)
wait_for "$WORK/shm.out" "attempt 1 failed" 30 && dt=$(echo "$(now) - $t_event" | bc) || dt=999
within 6 "shm: a rank SIGKILLed while its peers are in a shared-memory collective stopped the attempt" "$dt"
grep -m1 -oE "attempt 1 failed: .*restarting" "$WORK/shm.out" | sed 's/^/    /'
wait "$single"; rc=$?
[ "$rc" = 0 ] && ok "shm: the job finished after two restarts (exit 0)" || { fail "shm: exit $rc"; sed 's/^/    | /' "$WORK/shm.out"; }
fi

# --- 3. a whole node frozen, then a whole node SIGKILLed, under load ------------------------------
# node_case TAG SIGNAL: node n2 (its agent's group: timeout + agent, and its rank) gets SIGNAL
# while two busy loops load both cores.
node_case() {
  local tag=$1 sig=$2
  start_case "$tag"
  yes >/dev/null & load1=$!
  yes >/dev/null & load2=$!
  victim=$(rank_of "$agent2")
  kill -"$sig" -- "-$agent2" "$victim"; t_event=$(now)
  for k in 0 1; do
    dt=$(restart_after "$tag" $k 60)
    within $((GRACE + 10)) "$tag: n$k's agent stopped its rank after node n2 got SIG$sig (--node-timeout 3, grace $GRACE)" "$dt"
  done
  wait_for "$WORK/$tag.node0" "node n0 is node 0 of 2 .*restart 1" 30 && dt=$(echo "$(now) - $t_event" | bc) \
    && within $((GRACE + 13)) "$tag: the new round formed without n2" "$dt" || fail "$tag: no 2-node round"
  kill "$load1" "$load2"
  grep -m1 -oE "the job restarts \(.*" "$WORK/$tag.node0" | sed 's/^/    /'
  end_case "$tag" "0 1"
  expect_in "$WORK/$tag.node0" "nodes lost: n2"
  expect_not_in "$WORK/$tag.node0" "did not reach step"  # nobody waited for the collective timeout
  kill -KILL -- "-$agent2" "$victim" 2>/dev/null; kill -CONT -- "-$agent2" 2>/dev/null
  { wait "$agent2"; } 2>/dev/null
}
if want frozen; then node_case frozen STOP; fi
if want nodekill; then node_case nodekill KILL; fi

kill "$recorder"; wait "$recorder" 2>/dev/null
no_survivors "mtrain-worker --job $WORK"
no_survivors "rdzv-id detect-"
stale=""
for pid in $(sort -u "$WORK/rank-pids"); do
  for f in /dev/shm/mtrain-ar-"$pid"-*; do [ -e "$f" ] && stale="$stale $f"; done
done
[ -z "$stale" ] && ok "no shared-memory segment of the job's ranks is left in /dev/shm ($(sort -u "$WORK/rank-pids" | wc -l) rank pids checked)" \
  || fail "stale shared-memory segments:$stale"
finish
