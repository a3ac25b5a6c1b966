#!/bin/bash
# A rank failing on one node, then a node lost mid-run: worker-1 loses its network and every process (as in a power cut) while
# 2 nodes x 2 ranks are in all_reduce loops under the ssh launcher. Its heartbeats stop, the
# store fails the job naming worker-1, every rank on every node is stopped, the launcher exits 1.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/netns.sh"
need_torch
netns_cluster_up 2 || { finish; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
cp "$here/probe.py" "$WORK/probe_lost.py"
chmod -R a+rX "$WORK"
export GLOO_SOCKET_IFNAME=eth0
printf 'worker-0 slots=2\nworker-1 slots=2\n' >"$WORK/hosts"

# First a rank failing on worker-1: its code is the launcher's, the node is named, all ranks end.
netns_exec 0 timeout -k 5 120 "$MTRAIN" launch --hostfile "$WORK/hosts" "${NETNS_MTRAIN_SSH[@]}" --grace-period 2 \
  --export PROBE_FAIL_RANK=3 -- "$PY" "$WORK/probe_lost.py" --loop >"$WORK/fail" 2>&1
rc=$?
expect_rc 3 "rank 3 on worker-1 exits 3"
expect_in "$WORK/fail" "node 'worker-1' (node rank 1) reported a failure: rank 3 (local rank 1"
expect_in "$WORK/fail" "rank 3 fails on purpose"
no_survivors "$WORK/probe_lost.py"

# Then the whole node.
netns_exec 0 timeout -k 5 120 "$MTRAIN" launch --hostfile "$WORK/hosts" "${NETNS_MTRAIN_SSH[@]}" --node-timeout 3 \
  --grace-period 2 -- "$PY" "$WORK/probe_lost.py" --loop >"$WORK/out" 2>&1 &
launcher=$!
running=0
for _ in $(seq 300); do
  [ "$(grep -c "all_reduce ok" "$WORK/out")" -ge 4 ] && { running=1; break; }
  sleep 0.1
done
[ "$running" -eq 1 ] && ok "4 ranks are running" || fail "the job did not start"

start=$(date +%s.%N)
ip -n "$(netns_name 1)" link set eth0 down
for pid in $(netns_pids 1); do kill -9 "$pid" 2>/dev/null; done
wait $launcher; rc=$?
end=$(date +%s.%N)
expect_rc 1 "launcher after losing worker-1"
expect_in "$WORK/out" "node 'worker-1' (node rank 1) stopped sending heartbeats"
expect_in "$WORK/out" "mtrain: job"
no_survivors "$WORK/probe_lost.py"
no_survivors "--ssh-agent"
echo "timing: node lost -> launcher exit took $(echo "$end - $start" | bc) s (--node-timeout 3, --grace-period 2)"
finish
