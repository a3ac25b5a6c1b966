#!/usr/bin/env bash
# The bundled trainer on --rdzv-backend etcd (issue 43 item 2): a real three-member etcd cluster
# on loopback, four node agents (--nnodes 3:4 --max-restarts 2, one rank each) train the tiny GPT
# (global batch 24: 3 micro-batches of 2 per rank at world 4, 4 at world 3; a checkpoint every 5
# steps). Once past the first checkpoint the node that joined first (rank 0, the master's host)
# is SIGKILLed with its rank; the other three re-form, resume from the newest checkpoint at the
# same global batch and finish every step. (Two launchers training: test_etcd_tls.sh; a
# two-node job losing its first node: test_etcd_cluster.sh.)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/elastic_lib.sh"
. "$(dirname "$0")/etcd_lib.sh"
start_etcd
export MTRAIN_RDZV_TOKEN=etcd-trainer-0123456789abcdef
STEPS=12
job=("${tiny_job[@]}" --max-steps $STEPS --global-batch-size 24 --set train.log_interval=1)
start_node() {
  setsid timeout -k 5 240 "$MTRAIN" launch --rdzv-backend etcd --rdzv-endpoint "$ETCD_ENDPOINTS" \
    --nnodes 3:4 --max-restarts 2 --rdzv-id etcd-train --node-name "n$1" --rdzv-last-call 5 \
    --node-timeout 3 --rdzv-timeout 60 --master-port "$(free_port)" --nproc-per-node 1 --grace-period 2 \
    "${job[@]}" --work-dir "$WORK/train" >"$WORK/node$1" 2>&1 &
  eval "agent$1=\$!"
}
summary_of() { find "$1" -name summary.json -exec grep -L stopped_by {} + | head -1; }
t0=$(date +%s.%N)
start_node 0
wait_for "$WORK/node0" "nodes joined" 10 || fail "n0 joined"
for k in 1 2 3; do start_node $k; done
wait_for "$WORK/node0" "Iter\(train\) \[ *7/" 180 && ok "4 nodes trained past the checkpoint at step 5" \
  || { fail "training did not reach step 7"; sed 's/^/    n0 | /' "$WORK/node0"; }
grep -q "node n0 is node 0 of 4" "$WORK/node0" && ok "n0 joined first: node 0 of 4, the master" || fail "n0 is not node 0 of 4"
# The survivors' ranks are held (SIGSTOP) so that they do not fail on the broken collective first:
# what re-forms the job is n0's lease expiring in etcd (each agent stops its held rank itself).
pause_ranks STOP
tk=$(date +%s.%N)
kill -9 -- "-$agent0"
for k in 1 2 3; do wait_for "$WORK/node$k" "the job restarts" 30 || fail "no restart seen by n$k"; done
pause_ranks CONT
grep -m1 "the job restarts" "$WORK/node1" | sed 's/^/    /'
rcs=""
for k in 1 2 3; do wait "$(eval echo "\$agent$k")"; rcs="$rcs $?"; done
t1=$(date +%s.%N)
[ "$rcs" = " 0 0 0" ] && ok "the three survivors finished (exit 0) $(echo "$t1 - $tk" | bc) s after the kill, $(echo "$t1 - $t0" | bc) s in all" \
  || { fail "survivors exit$rcs"; for k in 1 2 3; do sed "s/^/    n$k | /" "$WORK/node$k"; done; }
grep -q "n0 lost" "$WORK/node1" && ok "the restart names n0" || fail "n0 not named"
expect_in() { grep -q -- "$2" "$1" && ok "says: $2" || fail "missing: $2"; }
# Rank 0 of the re-formed job says it: on whichever survivor joined round 1 first.
cat "$WORK"/node[123] >"$WORK/survivors"
expect_in "$WORK/survivors" "resuming from the newest complete checkpoint"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["steps"]==int(sys.argv[2]) and s["world_size"]==3 and s["global_batch"]==24, s' \
  "$(summary_of "$WORK/train")" "$STEPS" && ok "the job finished its $STEPS steps at world size 3, global batch 24" \
  || fail "summary of the resumed run"
[ "$(keys_under /mtrain/rdzv/)" = 0 ] && ok "the job's keys are removed" || fail "keys left in etcd"
finish
