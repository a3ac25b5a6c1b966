#!/usr/bin/env bash
# The bundled trainer on --rdzv-backend etcd (issue 43 item 2): a real three-member etcd cluster
# on loopback, two node agents (--nnodes 1:2 --max-restarts 2, one rank each) train the tiny GPT
# (global batch 4, a checkpoint every 5 steps). Once past the first checkpoint the node that
# joined first (rank 0, the master's host) is SIGKILLed with its rank; the survivor re-forms
# alone, resumes from the newest checkpoint at the same global batch and finishes every step.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/elastic_lib.sh"
. "$(dirname "$0")/etcd_lib.sh"
start_etcd
export MTRAIN_RDZV_TOKEN=etcd-trainer-0123456789abcdef
STEPS=30
job=("${tiny_job[@]}" --max-steps $STEPS --global-batch-size 4 --set train.log_interval=1)
start_node() {
  setsid timeout -k 5 240 "$MTRAIN" launch --rdzv-backend etcd --rdzv-endpoint "$ETCD_ENDPOINTS" \
    --nnodes 1:2 --max-restarts 2 --rdzv-id etcd-train --node-name "n$1" --rdzv-last-call 3 \
    --node-timeout 3 --rdzv-timeout 60 --master-port "$(free_port)" --nproc-per-node 1 --grace-period 2 \
    "${job[@]}" --work-dir "$WORK/train" >"$WORK/node$1" 2>&1 &
  eval "agent$1=\$!"
}
summary_of() { find "$1" -name summary.json -exec grep -L stopped_by {} + | head -1; }
t0=$(date +%s.%N)
start_node 0
wait_for "$WORK/node0" "nodes joined" 10 || fail "n0 joined"
start_node 1
wait_for "$WORK/node0" "Iter\(train\) \[ *7/" 120 && ok "2 nodes trained past the checkpoint at step 5" \
  || { fail "training did not reach step 7"; sed 's/^/    n0 | /' "$WORK/node0"; }
grep -q "node n0 is node 0 of 2" "$WORK/node0" && ok "n0 joined first: node 0, the master" || fail "n0 is not node 0"
# The survivor's rank is held (SIGSTOP) so that it does not fail on the broken collective first:
# what re-forms the job is n0's lease expiring in etcd (its agent stops the held rank itself).
pause_ranks STOP
kill -9 -- "-$agent0"
wait_for "$WORK/node1" "the job restarts" 30 || fail "no restart seen by n1"
pause_ranks CONT
grep -m1 "the job restarts" "$WORK/node1" | sed 's/^/    /'
wait "$agent1"; rc=$?
t1=$(date +%s.%N)
[ "$rc" = 0 ] && ok "the survivor finished (exit 0) in $(echo "$t1 - $t0" | bc) s" || { fail "survivor exit $rc"; sed 's/^/    n1 | /' "$WORK/node1"; }
grep -q "n0 lost" "$WORK/node1" && ok "the restart names n0" || fail "n0 not named"
expect_in() { grep -q -- "$2" "$1" && ok "says: $2" || fail "missing: $2"; }
expect_in "$WORK/node1" "resuming from the newest complete checkpoint"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["steps"]==int(sys.argv[2]) and s["world_size"]==1 and s["global_batch"]==4, s' \
  "$(summary_of "$WORK/train")" "$STEPS" && ok "the job finished its $STEPS steps at world size 1, global batch 4" \
  || fail "summary of the resumed run"
[ "$(keys_under /mtrain/rdzv/)" = 0 ] && ok "the job's keys are removed" || fail "keys left in etcd"
finish
