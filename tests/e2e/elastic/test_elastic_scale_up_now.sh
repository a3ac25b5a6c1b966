#!/usr/bin/env bash
# `--scale-up now` under dynamic rendezvous on loopback (issue 16 item 3, torchrun's behaviour):
# a job of n0 and n1 (one rank each, world 2, `--nnodes 2:3`) runs the bundled trainer (ZeRO-3,
# SGD, global batch 8, a checkpoint every 5 steps); n2 (two ranks) arrives →
#   * the store opens a new round at once, without counting a restart;
#   * both running nodes stop their ranks at once: no preemption notice (no SIGUSR1, no notice
#     grace), SIGTERM and SIGKILL after --grace-period, within a bound. The bundled trainer
#     treats SIGTERM as a stop request too: ranks that are all alive agree on the step and save
#     it on the way out (`preempted by SIGTERM at step N`), so it loses nothing when it can;
#   * the next round includes n2 (world 4), resumes from the newest checkpoint (that save), and
#     rank 0 reports the steps redone (the step reached before minus the step resumed);
#   * the job finishes its steps at world 4 with the same global batch; no process survives.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/elastic_lib.sh"
export MTRAIN_RDZV_TOKEN=elastic-now-0123456789abcdef
STEPS=40
job=("${tiny_job[@]}" --max-steps $STEPS --global-batch-size 8 --set train.log_interval=1)
RDZV_PORT=$(free_port); MASTER_PORT=$(free_port)
start_node() {  # K NPROC
  timeout -k 5 240 "$MTRAIN" launch --rdzv-backend mtrain --rdzv-endpoint "127.0.0.1:$RDZV_PORT" \
    --nnodes 2:3 --max-restarts 3 --rdzv-id elastic-now --node-name "n$1" --rdzv-last-call 3 --scale-up now \
    --node-timeout 3 --rdzv-timeout 60 --master-port "$MASTER_PORT" --nproc-per-node "$2" --grace-period 5 \
    "${job[@]}" --work-dir "$WORK/now" >"$WORK/now.node$1" 2>&1 &
  eval "agent$1=\$!"
}

start_node 0 1
wait_for "$WORK/now.node0" "listening on" 10 || fail "node 0 holds the store"
start_node 1 1
wait_for "$WORK/now.node0" "Iter\(train\) \[ *8/" 120 && ok "2 nodes (world 2) trained past the checkpoint at step 5" \
  || { fail "training did not reach step 8"; sed 's/^/    | /' "$WORK/now.node0"; }
# Paused mid-run (however fast this machine trains) while n2 arrives.
pause_ranks STOP
sleep 0.5
reached=$(cat "$WORK/now/.reached_step" 2>/dev/null)  # rank 0 writes it after every step
echo "    paused at step $reached"
start_node 2 2
t_arrive=$(now)
for k in 0 1; do
  wait_for "$WORK/now.node$k" "joining again" 30 && dt=$(echo "$(now) - $t_arrive" | bc) || dt=999
  within 12 "n$k stopped its ranks after n2 arrived" "$dt"
done
pause_ranks CONT  # their agents already sent the stopped ranks SIGCONT with SIGTERM
rcs=""
for k in 0 1 2; do eval "wait \$agent$k"; rcs="$rcs $?"; done
[ "$rcs" = " 0 0 0" ] && ok "all three nodes finished (exit 0 0 0)" \
  || { fail "exit codes:$rcs"; for k in 0 1 2; do sed "s/^/    n$k | /" "$WORK/now.node$k"; done; }
expect_in "$WORK/now.node0" "the job restarts (node 'n2' is waiting to join: the job scales up from 2 nodes)"
expect_not_in "$WORK/now.node0" "ranks get SIGUSR1"
expect_in "$WORK/now.node0" "The job re-formed (rendezvous round 1, restart count 0): node 'n2' is waiting to join"
expect_in "$WORK/now.node2" "node n2 is node 2 of 3 (ranks 2-3 of 4)"
saved=$(grep -oE "preempted by SIGTERM at step [0-9]+" "$WORK/now.node0" | tail -1 | grep -oE "[0-9]+$")
[ -n "$saved" ] && [ "$saved" -ge "$reached" ] && ok "the ranks stopped by SIGTERM saved step $saved (paused at $reached)" \
  || fail "no SIGTERM save (paused at $reached): '${saved:-none}'"
newest=$(ls -d "$WORK"/now/checkpoints/step_* | sed 's/.*step_//' | sort -n | awk -v s="${saved:-0}" '$1 <= s' | tail -1)
resumed=$(grep -oE "Resumed from [^ ]+ at step [0-9]+" "$WORK/now.node0" | tail -1)
cstep=$(echo "$resumed" | awk '{print $6}')
[ -n "$cstep" ] && [ "$cstep" = "$newest" ] && ok "the new round resumed from the newest checkpoint (step $cstep)" \
  || fail "resumed at '${cstep:-none}', the newest checkpoint was step_$newest"
redo=$(grep -oE "The job re-formed .*steps? redone" "$WORK/now.node0" | head -1)
prev=$(echo "$redo" | grep -oE "previous attempt reached step [0-9]+" | grep -oE "[0-9]+$")
n_redo=$(echo "$redo" | grep -oE "[0-9]+ steps? redone" | grep -oE "^[0-9]+")
[ -n "$n_redo" ] && [ "${prev:-0}" -ge "$reached" ] && [ "$n_redo" = "$((prev - cstep))" ] && ok "rank 0 reports: $redo" \
  || fail "steps redone: '$redo' (paused at $reached, resumed at ${cstep:-none})"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["steps"]==int(sys.argv[2]) and s["world_size"]==4 and s["global_batch"]==8, s' \
  "$(find "$WORK/now" -name summary.json -exec grep -L stopped_by {} + | head -1)" "$STEPS" \
  && ok "the job finished its $STEPS steps at world size 4, global batch 8" || fail "summary after scale up"
no_survivors "mtrain-worker --job $WORK"
finish
