#!/usr/bin/env bash
# Elastic scale up on --rdzv-backend etcd (issue 43 item 2) with the bundled trainer, as
# test_elastic_trainer.sh does it on the mtrain store: a real three-member etcd cluster on
# loopback; n0 and n1 (one rank each, --nnodes 2:3, --scale-up checkpoint, the default) train the
# tiny GPT at global batch 12; n2 arrives mid-run →
#   * the job re-forms at once as a membership change (round 1, restart count 0: no
#     --max-restarts given), the reason naming n2;
#   * n0 and n1 give their ranks the preemption notice (SIGUSR1): they save and exit, 0 steps redone;
#   * n2 comes after the survivors (node 2 of 3); the job finishes every step at world 3, global
#     batch 12; no process survives and the job's keys are gone.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/elastic_lib.sh"
. "$(dirname "$0")/etcd_lib.sh"
start_etcd
export MTRAIN_RDZV_TOKEN=etcd-scale-up-0123456789abcdef
STEPS=16
job=("${tiny_job[@]}" --max-steps $STEPS --global-batch-size 12 --set train.log_interval=1)
start_node() {
  setsid timeout -k 5 240 "$MTRAIN" launch --rdzv-backend etcd --rdzv-endpoint "$ETCD_ENDPOINTS" \
    --nnodes 2:3 --rdzv-id etcd-up --node-name "n$1" --rdzv-last-call 3 --node-timeout 3 --rdzv-timeout 60 \
    --master-port "$(free_port)" --nproc-per-node 1 --grace-period 5 "${job[@]}" --work-dir "$WORK/up" >"$WORK/node$1" 2>&1 &
  eval "agent$1=\$!"
}
t0=$(now)
start_node 0
wait_for "$WORK/node0" "nodes joined" 10 || fail "n0 joined"
start_node 1
wait_for "$WORK/node0" "Iter\(train\) \[ *6/" 120 && ok "2 nodes (world 2) trained past step 6" \
  || { fail "training did not reach step 6"; sed 's/^/    n0 | /' "$WORK/node0"; }
pause_ranks STOP  # mid-run however fast this machine trains, until both nodes have sent the notice
start_node 2
for k in 0 1; do
  wait_for "$WORK/node$k" "ranks get SIGUSR1 to save first" 30 && ok "n$k sends its ranks the preemption notice" \
    || fail "n$k did not send the notice"
done
pause_ranks CONT
rcs=""
for k in 0 1 2; do wait "$(eval echo "\$agent$k")"; rcs="$rcs $?"; done
t1=$(now)
[ "$rcs" = " 0 0 0" ] && ok "all three nodes finished (exit 0 0 0)" \
  || { fail "exit codes:$rcs"; for k in 0 1 2; do sed "s/^/    n$k | /" "$WORK/node$k"; done; }
expect_in "$WORK/node0" "the job restarts: node 'n2' is waiting to join: the job scales up from 2 nodes"
expect_in "$WORK/node0" "preempted by SIGUSR1 at step"
expect_in "$WORK/node0" "The job re-formed (rendezvous round 1, restart count 0): node 'n2' is waiting to join"
expect_in "$WORK/node2" "node n2 is node 2 of 3"
up_line=$(grep -oE "The job re-formed .*steps? redone" "$WORK/node0" | head -1)
echo "$up_line" | grep -q ": 0 steps redone" && ok "rank 0 reports: $up_line" || fail "scale up redid steps: '$up_line'"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["steps"]==int(sys.argv[2]) and s["world_size"]==3 and s["global_batch"]==12, s' \
  "$(find "$WORK/up" -name summary.json -exec grep -L stopped_by {} + | head -1)" "$STEPS" \
  && ok "the job finished its $STEPS steps at world size 3, global batch 12" || fail "summary after scale up"
[ "$(keys_under /mtrain/rdzv/)" = 0 ] && ok "the job's keys are removed" || fail "keys left in etcd"
no_survivors "mtrain-worker --job $WORK"
echo "    scale up on etcd: 2 nodes, +1, 3 nodes took $(echo "$t1 - $t0" | bc) s"
finish
