#!/bin/bash
# Dynamic node rendezvous with nodes started by hand: `--rdzv-backend mtrain --nnodes 2:3` on
# worker-0 (which holds the store, since the endpoint is its address) and worker-1. The store
# listens only on worker-0's address, refuses a peer without the job token, and the two nodes
# get node ranks and contiguous global ranks and run one gloo world of 4.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/netns.sh"
need_torch
netns_cluster_up 2 || { finish; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
export GLOO_SOCKET_IFNAME=eth0
MTRAIN_RDZV_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export MTRAIN_RDZV_TOKEN
common=(launch --rdzv-backend mtrain --rdzv-endpoint worker-0:29400 --nnodes 2:3 --rdzv-last-call 1
        --rdzv-id e2e-dyn --rdzv-timeout 60 --nproc-per-node 2 --grace-period 2)

start=$(date +%s.%N)
netns_exec 0 timeout -k 5 120 "$MTRAIN" "${common[@]}" --node-name worker-0 -- "$PY" "$here/probe.py" >"$WORK/n0" 2>&1 &
n0=$!
up=0
for _ in $(seq 100); do grep -q "listening on" "$WORK/n0" && { up=1; break; }; sleep 0.1; done
[ "$up" -eq 1 ] && ok "worker-0 holds the store" || fail "worker-0 did not start the store"

listeners=$(netns_exec 0 ss -Htln "sport = :29400" | awk '{print $4}')
[ "$listeners" = "$(netns_addr 0):29400" ] && ok "the store listens only on $(netns_addr 0):29400" \
  || fail "store listeners: $listeners"

netns_exec 1 "$PY" "$here/stray_peer.py" "$(netns_addr 0)" 29400 >"$WORK/stray" 2>&1
expect_in "$WORK/stray" "does not carry this job's token"
expect_in "$WORK/stray" "closed after reply"

# A node with the wrong token is refused and does not count.
MTRAIN_RDZV_TOKEN=wrong-token-0123456789 netns_exec 1 timeout -k 5 60 "$MTRAIN" "${common[@]}" --node-name worker-1 \
  -- "$PY" "$here/probe.py" >"$WORK/bad" 2>&1
rc=$?
expect_rc 1 "a node without the job's token"
expect_in "$WORK/bad" "refused"

netns_exec 1 timeout -k 5 120 "$MTRAIN" "${common[@]}" --node-name worker-1 -- "$PY" "$here/probe.py" >"$WORK/n1" 2>&1
rc=$?
expect_rc 0 "worker-1 (started by hand)"
wait $n0; rc=$?
end=$(date +%s.%N)
expect_rc 0 "worker-0 (started by hand, holds the store)"
cat "$WORK/n0" "$WORK/n1" >"$WORK/all"
expect_in "$WORK/n0" "1 nodes joined (need 2 to 3): worker-0"
expect_in "$WORK/n0" "last call: starting with 2 nodes unless more join within 1.0 s"
expect_in "$WORK/n0" "node worker-0 is node 0 of 2 (ranks 0-1 of 4), master $(netns_addr 0):29500"
expect_in "$WORK/n1" "node worker-1 is node 1 of 2 (ranks 2-3 of 4), master $(netns_addr 0):29500"
for r in 0 1 2 3; do expect_in "$WORK/all" "[worker-$((r / 2)):$r] rank $r/4 node $((r / 2)) local $((r % 2))/2"; done
expect_not_in "$WORK/all" "intruder"
no_survivors "$here/probe.py"
echo "timing: dynamic rendezvous of 2 nodes (1 s last call) + 2x2 gloo all_reduce took $(echo "$end - $start" | bc) s"
finish
