#!/usr/bin/env bash
# Restarts under node rendezvous, on loopback: three `mtrain launch --rdzv-backend mtrain
# --nnodes 2:3 --max-restarts 2` agents on this machine (2 Python ranks each).
#   1. A rank fails once → every node's ranks stop, the store opens a new round, all three
#      re-join; every rank of the second attempt sees TORCHELASTIC_RESTART_COUNT=1 and a world
#      of 6; the job succeeds.
#   2. A node's agent is SIGKILLed → the other two notice the missed heartbeats, re-form at 2
#      nodes (world 4, node ranks 0 and 1) with RESTART_COUNT=1 and finish.
. "$(dirname "$0")/../lib.sh"
need_torch
export MTRAIN_RDZV_TOKEN=elastic-token-0123456789abcdef
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# A copy in this test's own folder: the survivors check (and its pkill) matches this test's ranks
# only, never those of another test that runs the same script at the same time.
RANK_PY="$WORK/elastic_rank.py"
cp "$MTRAIN_SOURCE_DIR/tests/e2e/launch/elastic_rank.py" "$RANK_PY"

# start_node K MODE TAG: agent node K in the background (pid in agentK), output in $WORK/TAG.nodeK.
start_node() {
  MODE=$2 LOG="$WORK/$3.ranks" timeout -k 5 150 "$MTRAIN" launch --rdzv-backend mtrain \
    --rdzv-endpoint "127.0.0.1:$RDZV_PORT" --nnodes 2:3 --max-restarts 2 --rdzv-id "$3" --node-name "n$1" \
    --rdzv-last-call 3 --node-timeout 3 --rdzv-timeout 60 --master-port "$MASTER_PORT" --nproc-per-node 2 \
    --grace-period 2 -- "$PY" "$RANK_PY" >"$WORK/$3.node$1" 2>&1 &
  eval "agent$1=\$!"
}
wait_listening() {
  for _ in $(seq 100); do grep -q "listening on" "$WORK/$1.node0" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
lines() { grep -c -- "$2" "$WORK/$1.ranks" 2>/dev/null || true; }

# --- 1. a rank fails once ---------------------------------------------------------------------
RDZV_PORT=$(free_port); MASTER_PORT=$(free_port)
start_node 0 fail-once one
wait_listening one || fail "node 0 holds the store"
start_node 1 fail-once one
start_node 2 fail-once one
rcs=""
for k in 0 1 2; do eval "wait \$agent$k"; rcs="$rcs $?"; done
[ "$rcs" = " 0 0 0" ] && ok "every node finished after the restart (exit 0 0 0)" \
  || { fail "node exit codes:$rcs"; for k in 0 1 2; do sed "s/^/    n$k | /" "$WORK/one.node$k"; done; }
[ "$(lines one 'restart=0 .* world=6')" = 6 ] && ok "attempt 0: 6 ranks in a world of 6" \
  || fail "attempt 0 ranks: $(lines one 'restart=0')"
[ "$(lines one 'restart=1 .* world=6')" = 6 ] && ok "attempt 1: every rank sees RESTART_COUNT=1, world 6" \
  || { fail "attempt 1 lines"; sed 's/^/    | /' "$WORK/one.ranks"; }
[ "$(lines one 'restart=2')" = 0 ] && ok "the failure counted once for the job" || fail "a second restart happened"
for k in 0 1 2; do expect_in "$WORK/one.node$k" "all_reduce ok"; done
expect_in "$WORK/one.node0" "reported a failure"
expect_in "$WORK/one.node0" "restart 1"

# --- 2. a node's agent is killed ------------------------------------------------------------------
RDZV_PORT=$(free_port); MASTER_PORT=$(free_port)
start_node 0 hang-first two
wait_listening two || fail "node 0 holds the store"
start_node 1 hang-first two
start_node 2 hang-first two
for _ in $(seq 200); do [ "$(lines two 'restart=0')" = 6 ] && break; sleep 0.1; done
[ "$(lines two 'restart=0')" = 6 ] && ok "3 nodes, 6 ranks running" || fail "first attempt did not start: $(lines two 'restart=0')"
victim=$(pgrep -P "$agent2" | head -1)  # timeout's child: the agent
[ -n "$victim" ] && [ "$(readlink "/proc/$victim/exe")" = "$(readlink -f "$MTRAIN")" ] \
  && ok "found node 2's agent" || fail "node 2's agent not found (pid ${victim:-none})"
kill -KILL "$victim"
rcs=""
for k in 0 1; do eval "wait \$agent$k"; rcs="$rcs $?"; done
wait "$agent2" 2>/dev/null
[ "$rcs" = " 0 0" ] && ok "the two survivors finished (exit 0 0)" \
  || { fail "survivor exit codes:$rcs"; for k in 0 1; do sed "s/^/    n$k | /" "$WORK/two.node$k"; done; }
[ "$(lines two 'restart=1 .* world=4')" = 4 ] && ok "re-formed at 2 nodes: 4 ranks, RESTART_COUNT=1" \
  || { fail "attempt 1 lines"; sed 's/^/    | /' "$WORK/two.ranks"; }
[ "$(lines two 'restart=1 node=2')" = 0 ] && ok "node ranks renumbered 0..1" || fail "a node rank 2 in the new round"
expect_in "$WORK/two.node0" "stopped sending heartbeats"
no_survivors "$RANK_PY"
finish
