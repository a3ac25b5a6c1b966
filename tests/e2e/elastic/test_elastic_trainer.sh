#!/usr/bin/env bash
# The bundled trainer under dynamic rendezvous on loopback resumes itself (issue 16, "Must show"):
# three node agents (`--nnodes 2:3 --max-restarts 3`; n0 and n1 run 1 rank, n2 runs 2), ZeRO-3,
# SGD, train.global_batch_size 8 of micro-batches of 2 (grad_accum 1 at world 4), a checkpoint
# every 5 steps, 40 steps, a tiny GPT (so that it runs in well under a minute on a busy machine).
#   1. n2's agent is SIGKILLed mid-run → the survivors re-form at world 2, resume from the newest
#      checkpoint by themselves with grad_accum 2 (the global batch kept), rank 0 names the lost
#      node and the steps redone, and the job finishes its step count.
#   2. Its model.pt equals (<= 1e-6) that of a run resumed by hand from that same checkpoint at
#      world 2 on one node.
#   3. Scale up (--scale-up checkpoint, the default): a job of n0 and n1 (world 2) runs; n2 arrives
#      → the store opens a new round without counting a restart, the ranks get the preemption
#      notice and save, and the next round includes n2 (world 4, grad_accum 1) and resumes from
#      that save with no step redone; its weights equal those of a hand resume of that checkpoint
#      at world 4.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/elastic_lib.sh"
export MTRAIN_RDZV_TOKEN=elastic-trainer-0123456789abcdef
STEPS=60
job=("${tiny_job[@]}" --max-steps $STEPS --global-batch-size 8 --set train.log_interval=2)
RDZV_PORT=$(free_port); MASTER_PORT=$(free_port)

# start_node K NPROC [TAG]: node agent nK in the background (pid in agentK), output in
# $WORK/TAG.nodeK, training into $WORK/TAG (TAG: lost by default).
start_node() {
  local tag=${3:-lost}
  timeout -k 5 240 "$MTRAIN" launch --rdzv-backend mtrain --rdzv-endpoint "127.0.0.1:$RDZV_PORT" \
    --nnodes 2:3 --max-restarts 3 --rdzv-id "elastic-$tag" --node-name "n$1" --rdzv-last-call 3 \
    --node-timeout 3 --rdzv-timeout 60 --master-port "$MASTER_PORT" --nproc-per-node "$2" --grace-period 2 \
    --grad-accum 1 "${job[@]}" --work-dir "$WORK/$tag" >"$WORK/$tag.node$1" 2>&1 &
  eval "agent$1=\$!"
}
# final_weights_equal A B: model.pt files within 1e-6.
final_weights_equal() {
  "$PY" - "$1" "$2" <<'PYEOF'
import sys, torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
assert a.keys() == b.keys(), (a.keys(), b.keys())
worst = max((a[k] - b[k]).abs().max().item() for k in a)
print(f"    max |elastic - by hand| over {len(a)} tensors: {worst:.3g}")
assert worst <= 1e-6
PYEOF
}
# summary_of WORK_DIR: the summary.json of the run that finished (a round stopped by the notice
# writes one too, with stopped_by).
summary_of() { find "$1" -name summary.json -exec grep -L stopped_by {} + | head -1; }

t0=$(date +%s.%N)
start_node 0 1
wait_for "$WORK/lost.node0" "listening on" 10 || fail "node 0 holds the store"
start_node 1 1
start_node 2 2
# Kill once the first checkpoint is saved and training went on past it.
wait_for "$WORK/lost.node0" "Iter\(train\) \[ *8/" 120 && ok "3 nodes (world 4) trained past the checkpoint at step 5" \
  || { fail "training did not reach step 8"; cat "$WORK/lost.node0"; }
grep -q "world 4" "$WORK/lost.node0" && ok "the first round has world size 4" || fail "first round world size"
victim=$(pgrep -P "$agent2" | head -1)  # timeout's child: the agent
[ -n "$victim" ] && [ "$(readlink "/proc/$victim/exe")" = "$(readlink -f "$MTRAIN")" ] \
  && ok "found node n2's agent" || fail "node n2's agent not found (pid ${victim:-none})"
pause_ranks STOP
kill -KILL "$victim"
pause_ranks CONT
rcs=""
for k in 0 1; do eval "wait \$agent$k"; rcs="$rcs $?"; done
wait "$agent2" 2>/dev/null
t1=$(date +%s.%N)
[ "$rcs" = " 0 0" ] && ok "the two survivors finished (exit 0 0)" \
  || { fail "survivor exit codes:$rcs"; for k in 0 1; do sed "s/^/    n$k | /" "$WORK/lost.node$k"; done; }
expect_in "$WORK/lost.node0" "resuming from the newest complete checkpoint"
expect_in "$WORK/lost.node0" "train.global_batch_size 8 at world size 2: grad_accum 2 (was 1)"
expect_in "$WORK/lost.node0" "The job re-formed (rendezvous round 1, restart count 1)"
expect_in "$WORK/lost.node0" "nodes lost: n2"
redo_line=$(grep -oE "The job re-formed .*steps? redone" "$WORK/lost.node0" | head -1)
[ -n "$redo_line" ] && ok "rank 0 reports: $redo_line" || { fail "no steps-redone line"; sed 's/^/    | /' "$WORK/lost.node0"; }
resumed=$(grep -oE "Resumed from [^ ]+ at step [0-9]+" "$WORK/lost.node0" | tail -1)
ckpt=$(echo "$resumed" | awk '{print $3}'); cstep=$(echo "$resumed" | awk '{print $6}')
[ -n "$ckpt" ] && [ "$cstep" -ge 5 ] && ok "resumed by itself from $ckpt (step $cstep)" || fail "no resume line: '$resumed'"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["steps"]==int(sys.argv[2]) and s["world_size"]==2 and s["global_batch"]==8, s' \
  "$(summary_of "$WORK/lost")" "$STEPS" && ok "the job finished its $STEPS steps at world size 2" \
  || fail "summary of the resumed run"
no_survivors "mtrain-worker --job $WORK"

# The reference: that checkpoint resumed by hand at world 2 on one node.
mkdir -p "$WORK/ref/checkpoints" && cp -r "$ckpt" "$WORK/ref/checkpoints/"
run_mtrain "$WORK/ref.out" launch --nproc-per-node 2 --master-port 0 --grad-accum 2 "${job[@]}" \
  --work-dir "$WORK/ref" --resume auto
expect_rc 0 "reference: resumed by hand at world 2"
expect_in "$WORK/ref.out" "at step $cstep"
final_weights_equal "$WORK/lost/model.pt" "$WORK/ref/model.pt" && ok "final weights equal the hand-resumed run's (<= 1e-6)" \
  || fail "final weights differ from the hand-resumed run's"
echo "    lost node: elastic run (3 nodes, kill, 2 nodes) took $(echo "$t1 - $t0" | bc) s"

# --- 3. scale up -------------------------------------------------------------------------------
RDZV_PORT=$(free_port); MASTER_PORT=$(free_port)
t0=$(date +%s.%N)
start_node 0 1 up
wait_for "$WORK/up.node0" "listening on" 10 || fail "node 0 holds the store (scale up)"
start_node 1 1 up
wait_for "$WORK/up.node0" "Iter\(train\) \[ *6/" 120 && ok "2 nodes (world 2) trained past step 6" \
  || { fail "training (scale up) did not reach step 6"; cat "$WORK/up.node0"; }
pause_ranks STOP  # until both nodes have sent their ranks the notice
start_node 2 2 up
for k in 0 1; do
  wait_for "$WORK/up.node$k" "ranks get SIGUSR1 to save first" 30 && ok "n$k sends its ranks the preemption notice" \
    || fail "n$k did not send the notice"
done
pause_ranks CONT
rcs=""
for k in 0 1 2; do eval "wait \$agent$k"; rcs="$rcs $?"; done
t1=$(date +%s.%N)
[ "$rcs" = " 0 0 0" ] && ok "all three nodes finished (exit 0 0 0)" \
  || { fail "scale-up exit codes:$rcs"; for k in 0 1 2; do sed "s/^/    n$k | /" "$WORK/up.node$k"; done; }
expect_in "$WORK/up.node0" "preempted by SIGUSR1 at step"
expect_in "$WORK/up.node0" "The job re-formed (rendezvous round 1, restart count 0): node 'n2' is waiting to join"
expect_in "$WORK/up.node0" "train.global_batch_size 8 at world size 2: grad_accum 2 (was 1)"
expect_in "$WORK/up.node2" "node n2 is node 2 of 3 (ranks 2-3 of 4)"
up_line=$(grep -oE "The job re-formed .*steps? redone" "$WORK/up.node0" | head -1)
echo "$up_line" | grep -q ": 0 steps redone" && ok "rank 0 reports: $up_line" || fail "scale up redid steps: '$up_line'"
resumed=$(grep -oE "Resumed from [^ ]+ at step [0-9]+" "$WORK/up.node0" | tail -1)
ckpt=$(echo "$resumed" | awk '{print $3}'); cstep=$(echo "$resumed" | awk '{print $6}')
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["steps"]==int(sys.argv[2]) and s["world_size"]==4 and s["global_batch"]==8, s' \
  "$(summary_of "$WORK/up")" "$STEPS" && ok "the job finished its $STEPS steps at world size 4" || fail "summary after scale up"
mkdir -p "$WORK/upref/checkpoints" && cp -r "$ckpt" "$WORK/upref/checkpoints/"
run_mtrain "$WORK/upref.out" launch --nproc-per-node 4 --master-port 0 --grad-accum 1 "${job[@]}" \
  --work-dir "$WORK/upref" --resume auto
expect_rc 0 "reference: the scale-up checkpoint (step $cstep) resumed by hand at world 4"
final_weights_equal "$WORK/up/model.pt" "$WORK/upref/model.pt" && ok "scale up: final weights equal the hand-resumed run's" \
  || fail "scale up: final weights differ"
no_survivors "mtrain-worker --job $WORK"
echo "    scale up: elastic run (2 nodes, +1, 3 nodes) took $(echo "$t1 - $t0" | bc) s"
finish
