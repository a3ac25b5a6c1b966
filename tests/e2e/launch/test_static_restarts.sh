#!/usr/bin/env bash
# Restarts of a static job started by hand, torchrun-style: `mtrain launch --nnodes 2 --node-rank K
# --master-addr A --master-port P --max-restarts 2` on each node (2 Python ranks each), no token,
# no rendezvous flags beyond the store's port. Node 0 holds a fixed-size store (2 nodes).
#   1. A rank on node 1 fails once → both nodes' ranks stop and restart together; every rank of
#      the second attempt sees TORCHELASTIC_RESTART_COUNT=1 in a world of 4; the job succeeds and
#      the failure counted once for the job.
#   2. Node 1's agent is SIGKILLed → node 0 notices the missed heartbeats and waits for it; node 1
#      started again by hand joins as node rank 1 → restart 1, world 4, the job succeeds.
#   3. Node 1's agent is SIGKILLed and nobody starts it again → node 0 fails within the rendezvous
#      timeout, naming the node lost.
. "$(dirname "$0")/../lib.sh"
need_torch
unset MTRAIN_RDZV_TOKEN
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# A copy in this test's own folder: the survivors check (and its pkill) matches this test's ranks
# only, never those of another test that runs the same script at the same time.
RANK_PY="$WORK/elastic_rank.py"
cp "$MTRAIN_SOURCE_DIR/tests/e2e/launch/elastic_rank.py" "$RANK_PY"

# start_node K MODE TAG [OUT]: static node K in the background (pid in agentK), output in $WORK/TAG.nodeK.
start_node() {
  MODE=$2 LOG="$WORK/$3.ranks" timeout -k 5 150 "$MTRAIN" launch --nnodes 2 --node-rank "$1" \
    --master-addr 127.0.0.1 --master-port "$MASTER_PORT" --rdzv-port "$RDZV_PORT" --max-restarts 2 \
    --node-timeout 3 --rdzv-timeout "${RDZV_TIMEOUT:-60}" --nproc-per-node 2 --grace-period 2 \
    -- "$PY" "$RANK_PY" >"${4:-$WORK/$3.node$1}" 2>&1 &
  eval "agent$1=\$!"
}
lines() { grep -c -- "$2" "$WORK/$1.ranks" 2>/dev/null || true; }
# kill_agent K: SIGKILL node K's agent (timeout's child), checked to be mtrain.
kill_agent() {
  local victim
  victim=$(eval "pgrep -P \$agent$1" | head -1)
  [ -n "$victim" ] && [ "$(readlink "/proc/$victim/exe")" = "$(readlink -f "$MTRAIN")" ] \
    && ok "found node $1's agent" || fail "node $1's agent not found (pid ${victim:-none})"
  kill -KILL "$victim"
}
wait_lines() {  # TAG PATTERN COUNT
  for _ in $(seq 300); do [ "$(lines "$1" "$2")" = "$3" ] && return 0; sleep 0.1; done
  return 1
}

# --- 1. a rank fails once ---------------------------------------------------------------------
RDZV_PORT=$(free_port); MASTER_PORT=$(free_port)
start_node 1 fail-once one  # node 1 first: it waits for node 0's store
start_node 0 fail-once one
rcs=""
for k in 0 1; do eval "wait \$agent$k"; rcs="$rcs $?"; done
[ "$rcs" = " 0 0" ] && ok "both nodes finished after the restart (exit 0 0)" \
  || { fail "node exit codes:$rcs"; for k in 0 1; do sed "s/^/    n$k | /" "$WORK/one.node$k"; done; }
[ "$(lines one 'restart=0 .* world=4')" = 4 ] && ok "attempt 0: 4 ranks in a world of 4" \
  || fail "attempt 0 ranks: $(lines one 'restart=0')"
[ "$(lines one 'restart=1 .* world=4')" = 4 ] && ok "attempt 1: every rank on both nodes sees RESTART_COUNT=1" \
  || { fail "attempt 1 lines"; sed 's/^/    | /' "$WORK/one.ranks"; }
[ "$(lines one 'restart=1 node=1 rank=[23] ')" = 2 ] && ok "node 1 kept node rank 1 (ranks 2-3)" \
  || { fail "node 1's ranks in attempt 1"; sed 's/^/    | /' "$WORK/one.ranks"; }
[ "$(lines one 'restart=2')" = 0 ] && ok "the failure counted once for the job" || fail "a second restart happened"
for k in 0 1; do expect_in "$WORK/one.node$k" "all_reduce ok"; done
expect_in "$WORK/one.node0" "MTRAIN_RDZV_TOKEN is unset"
expect_in "$WORK/one.node1" "restart 1"

# --- 2. node 1's agent is killed, then started again by hand ---------------------------------------
RDZV_PORT=$(free_port); MASTER_PORT=$(free_port)
start_node 0 hang-first two
start_node 1 hang-first two
wait_lines two 'restart=0' 4 && ok "2 nodes, 4 ranks running" || fail "first attempt did not start: $(lines two 'restart=0')"
kill_agent 1
wait "$agent1" 2>/dev/null
for _ in $(seq 150); do grep -q "joining again" "$WORK/two.node0" && break; sleep 0.1; done
expect_in "$WORK/two.node0" "stopped sending heartbeats"
start_node 1 hang-first two "$WORK/two.node1.again"
rcs=""
for k in 0 1; do eval "wait \$agent$k"; rcs="$rcs $?"; done
[ "$rcs" = " 0 0" ] && ok "node 0 and the restarted node 1 finished (exit 0 0)" \
  || { fail "exit codes:$rcs"; sed "s/^/    n0 | /" "$WORK/two.node0"; sed "s/^/    n1 | /" "$WORK/two.node1.again"; }
[ "$(lines two 'restart=1 .* world=4')" = 4 ] && ok "re-formed with both nodes: 4 ranks, RESTART_COUNT=1" \
  || { fail "attempt 1 lines"; sed 's/^/    | /' "$WORK/two.ranks"; }
[ "$(lines two 'restart=1 node=1 rank=[23] ')" = 2 ] && ok "the new node 1 is node rank 1 again" \
  || { fail "node 1's ranks in attempt 1"; sed 's/^/    | /' "$WORK/two.ranks"; }

# --- 3. node 1 lost for good: the job fails naming it ------------------------------------------------
RDZV_PORT=$(free_port); MASTER_PORT=$(free_port)
RDZV_TIMEOUT=4 start_node 0 hang-first three
RDZV_TIMEOUT=4 start_node 1 hang-first three
wait_lines three 'restart=0' 4 && ok "2 nodes, 4 ranks running" || fail "first attempt did not start"
kill_agent 1
start=$(date +%s)
wait "$agent0"; rc=$?
took=$(($(date +%s) - start))
wait "$agent1" 2>/dev/null
[ "$rc" -ne 0 ] && ok "node 0 failed (exit $rc) after ${took} s" || fail "node 0 exit 0 without node 1"
[ "$took" -le 30 ] && ok "within the heartbeat and rendezvous timeouts" || fail "node 0 took ${took} s"
expect_in "$WORK/three.node0" "nodes lost: node-1"
no_survivors "$RANK_PY"
finish
