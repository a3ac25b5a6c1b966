#!/bin/bash
# Nodes that never join. (1) Started by hand with the job's hostfile: worker-1 is never started,
# the rendezvous times out naming it. (2) Over ssh: worker-1's sshd is down, so the launcher
# stops the agent already waiting on worker-0 and names worker-1.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/netns.sh"
need_torch
netns_cluster_up 2 || { finish; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
cp "$here/probe.py" "$WORK/probe_nj.py"
chmod -R a+rX "$WORK"
printf 'worker-0 slots=1\nworker-1 slots=1\n' >"$WORK/hosts"
MTRAIN_RDZV_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export MTRAIN_RDZV_TOKEN

start=$(date +%s.%N)
netns_exec 0 timeout -k 5 60 "$MTRAIN" launch --hostfile "$WORK/hosts" --rdzv-backend mtrain \
  --rdzv-endpoint worker-0:29400 --rdzv-timeout 3 --node-name worker-0 -- "$PY" "$WORK/probe_nj.py" >"$WORK/n0" 2>&1
rc=$?
end=$(date +%s.%N)
expect_rc 1 "a job whose second node never joins"
expect_in "$WORK/n0" "1/2 nodes joined; waiting for: worker-1"
expect_in "$WORK/n0" "rendezvous timed out after 3.0 s: 1/2 nodes joined; never joined: worker-1"
echo "timing: join timeout 3 s -> exit took $(echo "$end - $start" | bc) s"

# worker-1's ssh server goes away (the fixture's own child, by pid).
sshd1=$(echo $NETNS_SSHD_PIDS | awk '{print $2}')
kill "$sshd1"; wait "$sshd1" 2>/dev/null
unset MTRAIN_RDZV_TOKEN
netns_exec 0 timeout -k 5 60 "$MTRAIN" launch --hostfile "$WORK/hosts" "${NETNS_MTRAIN_SSH[@]}" --grace-period 2 \
  -- "$PY" "$WORK/probe_nj.py" >"$WORK/ssh" 2>&1
rc=$?
expect_rc 1 "ssh launch with an unreachable host"
expect_in "$WORK/ssh" "ssh to worker-1 failed"
no_survivors "$WORK/probe_nj.py"
no_survivors "--ssh-agent"
finish
