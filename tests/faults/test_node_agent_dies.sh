#!/usr/bin/env bash
# Scenario: two "machines" (network namespaces) form a job by dynamic rendezvous; the node
# agent of worker-1 is SIGKILLed. Its ranks die with it, worker-0 notices the missed
# heartbeats, reports the node and tears its own ranks down: nothing survives anywhere.
. "$(dirname "$0")/lib.sh"
need_flag --rdzv-backend "multi-node brief H3 item 3"
. "$MTRAIN_SOURCE_DIR/tests/e2e/netns/netns.sh"
netns_cluster_up 2 || { finish; exit 1; }
trap 'netns_cluster_down; cleanup' EXIT
ep="$(netns_addr 0):29400"
for k in 0 1; do
  # timeout is the background job ($!); its child is `ip netns exec` → env → mtrain (each execs).
  timeout -k 5 180 ip netns exec "$(netns_name "$k")" env "MTRAIN_TEST_TAG=$TAG" \
    MTRAIN_RDZV_TOKEN=faults-token-0123456789abcdef "$MTRAIN" launch --rdzv-backend mtrain \
    --rdzv-endpoint "$ep" --nnodes 2 --nproc-per-node 2 --rdzv-id "$TAG" \
    -- bash -c 'echo "up $RANK on $GROUP_RANK"; exec sleep 300' >"$WORK/node$k.out" 2>&1 &
  eval "agent$k=\$!"
done
wait_for 60 count_tagged_at_least 6 && ok "2 agents + 4 ranks running" ">= 6" "$(tagged_pids | wc -l)" \
  || fail "2 agents + 4 ranks running" ">= 6" "$(tagged_pids | wc -l)"
victim=$(pgrep -P "$agent1" | head -1)
[ -n "$victim" ] && [ "$(readlink "/proc/$victim/exe")" = "$(readlink -f "$MTRAIN")" ] \
  && ok "found worker-1's agent" "an mtrain process" "pid $victim" \
  || fail "found worker-1's agent" "an mtrain process" "pid ${victim:-none}: $(readlink "/proc/${victim:-0}/exe" 2>/dev/null)"
kill -KILL "$victim"
timeout 150 tail --pid="$agent0" -f /dev/null
wait "$agent0"; rc=$?
expect_rc_not "worker-0 after worker-1's agent died"
expect_any "$WORK/node0.out" "report names the dead node" "node rank 1" "$(netns_addr 1)" "node_rank 1"
expect_any "$WORK/node0.out" "report says why" "heartbeat" "lost" "died"
no_survivors 10
finish
