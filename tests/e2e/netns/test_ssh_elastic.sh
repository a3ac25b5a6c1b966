#!/bin/bash
# Elastic training over ssh (issue 16, "Must show"): three sshd-served "machines", the bundled
# trainer (ZeRO-3, SGD, a checkpoint every 5 steps, train.global_batch_size 12 of micro-batches
# of 2) started by `mtrain launch --hostfile … --nnodes 2:3 --max-restarts 3`.
#   1. worker-2's agent is SIGKILLed mid-run and its network goes down → the launcher does not
#      stop the others: the store re-forms at world 2, the trainer resumes from the newest
#      checkpoint by itself (grad_accum 3), the new agents the launcher starts on worker-2 cannot
#      connect, and the job finishes its steps on 2 nodes; the final weights equal (<= 1e-6) those
#      of that checkpoint resumed by hand at world 2.
#   2. A job whose worker-2 is unreachable at the start forms on 2 nodes; when worker-2 answers
#      again, the agent the launcher starts there joins and the next round includes it (world 3).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/netns.sh"
need_torch
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
netns_cluster_up 3 || { finish; exit 1; }
chmod -R a+rX "$WORK"
export GLOO_SOCKET_IFNAME=eth0
printf 'worker-0 slots=1\nworker-1 slots=1\nworker-2 slots=1\n' >"$WORK/hosts"
STEPS=60
job=(--strategy zero3 --optim sgd --lr 0.05 --batch-size 2 --global-batch-size 12
     --set model.n_layer=1 --set model.n_embd=16 --set model.block_size=8 --set data.num_samples=4000
     --checkpoint-interval 5 --set checkpoint.keep=100 --seed 3 --set train.threads=1 --set train.log_interval=2)
# Run folders (and so the ranks' command lines) under $WORK on every node: they mark this test's ranks.
common=(launch --hostfile "$WORK/hosts" "${NETNS_MTRAIN_SSH[@]}" --export "TMPDIR=$WORK" --nnodes 2:3
        --max-restarts 3 --node-timeout 3 --rdzv-last-call 3 --rdzv-timeout 60 --grace-period 2)
agent_in() {  # the node agent living in worker-K's namespace
  for p in $(netns_pids "$1"); do
    [ "$(readlink "/proc/$p/exe")" = "$(readlink -f "$MTRAIN")" ] && grep -qa -- "--ssh-agent" "/proc/$p/cmdline" \
      && { echo "$p"; return; }
  done
}

# --- 1. a node lost mid-run --------------------------------------------------------------------
cd "$WORK"
netns_exec 0 timeout -k 5 240 "$MTRAIN" "${common[@]}" "${job[@]}" --max-steps $STEPS --work-dir "$WORK/lost" \
  >"$WORK/lost.out" 2>&1 &
launcher=$!
wait_for "$WORK/lost.out" "Iter\(train\) \[ *8/" 120 && ok "3 nodes trained past the checkpoint at step 5" \
  || { fail "training did not reach step 8"; sed 's/^/    | /' "$WORK/lost.out"; }
grep -q "ranks 2-2 of 3" "$WORK/lost.out" && ok "the first round has world size 3" || fail "first round world size"
victim=$(agent_in 2)
[ -n "$victim" ] && ok "found worker-2's agent (pid $victim)" || fail "worker-2's agent not found"
pause_ranks STOP
kill -KILL "$victim"
wait_for "$WORK/lost.out" "node worker-2 lost" 15 && ok "the launcher saw worker-2 lost and kept the job" \
  || fail "no 'node worker-2 lost' line"
ip -n "$(netns_name 2)" link set eth0 down  # the new agents started there cannot connect
pause_ranks CONT
wait $launcher; rc=$?
expect_rc 0 "the job finished on the two other nodes"
expect_in "$WORK/lost.out" "the job goes on without it"
expect_in "$WORK/lost.out" "The job re-formed (rendezvous round 1, restart count 1)"
expect_in "$WORK/lost.out" "nodes lost: worker-2"
expect_in "$WORK/lost.out" "train.global_batch_size 12 at world size 2: grad_accum 3 (was 1)"
resumed=$(grep -oE "Resumed from [^ ]+ at step [0-9]+" "$WORK/lost.out" | tail -1)
ckpt=$(echo "$resumed" | awk '{print $3}'); cstep=$(echo "$resumed" | awk '{print $6}')
[ -n "$ckpt" ] && [ "${cstep:-0}" -ge 5 ] && ok "resumed by itself from $ckpt (step $cstep)" || fail "no resume line: '$resumed'"
summary=$(find "$WORK/lost" -name summary.json -exec grep -L stopped_by {} + | head -1)
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["steps"]==int(sys.argv[2]) and s["world_size"]==2 and s["global_batch"]==12, s' \
  "$summary" "$STEPS" && ok "the job finished its $STEPS steps at world size 2" || fail "summary of the resumed run"
no_survivors "mtrain-worker --job $WORK"
no_survivors "--ssh-agent"

# The reference: that checkpoint resumed by hand at world 2 on one machine.
mkdir -p "$WORK/ref/checkpoints" && cp -r "$ckpt" "$WORK/ref/checkpoints/"
GLOO_SOCKET_IFNAME=lo run_mtrain "$WORK/ref.out" launch --nproc-per-node 2 --master-port 0 --grad-accum 3 "${job[@]}" --max-steps $STEPS \
  --work-dir "$WORK/ref" --resume auto
expect_rc 0 "reference: resumed by hand at world 2"
"$PY" - "$WORK/lost/model.pt" "$WORK/ref/model.pt" <<'PYEOF' && ok "final weights equal the hand-resumed run's (<= 1e-6)" || fail "final weights differ"
import sys, torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
assert a.keys() == b.keys(), (a.keys(), b.keys())
worst = max((a[k] - b[k]).abs().max().item() for k in a)
print(f"    max |elastic over ssh - by hand| over {len(a)} tensors: {worst:.3g}")
assert worst <= 1e-6
PYEOF

# --- 2. a node that comes back joins the next round --------------------------------------------
# worker-2 is still unreachable: the job forms on 2 nodes after the last call.
netns_exec 0 timeout -k 5 240 "$MTRAIN" "${common[@]}" "${job[@]}" --max-steps 400 --work-dir "$WORK/back" \
  >"$WORK/back.out" 2>&1 &
launcher=$!
wait_for "$WORK/back.out" "Iter\(train\) \[ *6/" 120 && ok "2 nodes trained past step 6 without worker-2" \
  || { fail "training without worker-2 did not start"; sed 's/^/    | /' "$WORK/back.out"; }
grep -q "ranks 1-1 of 2" "$WORK/back.out" && ok "the job formed at world size 2" || fail "world size 2 at the start"
pause_ranks STOP  # so that the job is still running when worker-2's new agent joins
ip -n "$(netns_name 2)" link set eth0 up
wait_for "$WORK/back.out" "ranks get SIGUSR1 to save first" 90 && ok "worker-2 joined: the running nodes save first" \
  || { fail "worker-2 never joined"; pause_ranks CONT; sed 's/^/    | /' "$WORK/back.out"; }
pause_ranks CONT
wait $launcher; rc=$?
expect_rc 0 "the job finished with worker-2 back"
expect_in "$WORK/back.out" "node worker-2 is node 2 of 3 (ranks 2-2 of 3)"
expect_in "$WORK/back.out" "(rendezvous round 1, restart count 0): node 'worker-2' is waiting to join"
no_survivors "mtrain-worker --job $WORK"
no_survivors "--ssh-agent"
finish
