#!/bin/bash
# ssh launcher across two "machines": `mtrain launch --hostfile` in worker-0 starts an agent on
# worker-0 and worker-1 over ssh; 2 nodes x 2 python3-torch ranks form one gloo world of 4.
# Also: the dry-run JSON shows the selected hosts, arguments with spaces and ';' arrive intact,
# --export and NCCL_* reach the ranks, the job token is in no argv and no rank environment, and
# nothing of the job is left afterwards.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/netns.sh"
need_torch
netns_cluster_up 2 || { finish; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
dir="$WORK/my dir;x"
mkdir -p "$dir"
cp "$here/probe.py" "$dir/probe.py"
chmod -R a+rX "$WORK"
printf '# two nodes\nworker-0 slots=2\nworker-1 slots=2   # the second\nworker-2 slots=4\n' >"$WORK/hosts"

# The dry run contacts nobody and shows what the filters leave.
netns_exec 0 "$MTRAIN" launch --hostfile "$WORK/hosts" --exclude "worker-2" --dry-run --format json \
  -- "$PY" "$dir/probe.py" >"$WORK/plan.json" 2>&1
if "$PY" - "$WORK/plan.json" <<'PYEOF'
import json, sys
p = json.load(open(sys.argv[1]))
assert [n["host"] for n in p["nodes"]] == ["worker-0", "worker-1"], p["nodes"]
assert [n["gpus"] for n in p["nodes"]] == [[0, 1], [0, 1]]
assert [w["rank"] for n in p["nodes"] for w in n["workers"]] == [0, 1, 2, 3]
assert p["world_size"] == 4 and p["master_addr"] == "worker-0" and p["rdzv"]["backend"] == "mtrain"
PYEOF
then ok "dry run: nodes[].host and .gpus after --exclude"; else fail "dry-run plan"; sed 's/^/    | /' "$WORK/plan.json"; fi

export NCCL_DEBUG=INFO
# gloo binds the address of the hostname, which the namespaces do not have: name the interface
# (forwarded to every host like every GLOO_* variable).
export GLOO_SOCKET_IFNAME=eth0
start=$(date +%s.%N)
netns_exec 0 timeout -k 5 120 "$MTRAIN" launch --hostfile "$WORK/hosts" --num-nodes 2 "${NETNS_MTRAIN_SSH[@]}" \
  --export "FOO=bar baz" --grace-period 2 -- "$PY" "$dir/probe.py" "an arg; touch $WORK/pwned" >"$WORK/out" 2>&1 &
launcher=$!
# While it runs: the token is in no command line on this machine (all namespaces share /proc).
seen_token=0
for _ in $(seq 100); do
  if grep -q "all_reduce ok" "$WORK/out" 2>/dev/null; then break; fi
  sleep 0.1
done
if pgrep -af -- "--ssh-agent" | grep -qi "RDZV_TOKEN="; then seen_token=1; fi
wait $launcher; rc=$?
end=$(date +%s.%N)
expect_rc 0 "2 nodes x 2 ranks over ssh"
for r in 0 1 2 3; do expect_in "$WORK/out" "rank $r/4 node $((r / 2)) local $((r % 2))/2 host worker-$((r / 2)) master"; done
expect_in "$WORK/out" "[worker-1:3] rank 3/4"
expect_in "$WORK/out" "rank 3 args=['an arg; touch $WORK/pwned'] FOO='bar baz' NCCL_DEBUG='INFO' token_in_env=False"
expect_in "$WORK/out" "rendezvous: 1/2 nodes joined; waiting for: worker-"
expect_in "$WORK/out" "rendezvous: job formed: 2 nodes, 4 ranks"
expect_not_in "$WORK/out" "MTRAIN_AGENT"
[ ! -e "$WORK/pwned" ] && ok "an argument with ';' was not run by a shell" || fail "an argument was run by a shell"
[ "$seen_token" -eq 0 ] && ok "no command line carries the token" || fail "the token is visible in a command line"
no_survivors "$dir/probe.py"
no_survivors "--ssh-agent"
echo "timing: 2x2 ssh launch with gloo all_reduce took $(echo "$end - $start" | bc) s"

# Ctrl-C on the launcher mid-run: every agent is stopped by its process group, nothing is left.
cp "$dir/probe.py" "$WORK/probe_int.py"
netns_exec 0 timeout -k 5 120 "$MTRAIN" launch --hostfile "$WORK/hosts" --num-nodes 2 "${NETNS_MTRAIN_SSH[@]}" \
  --grace-period 2 -- "$PY" "$WORK/probe_int.py" --loop >"$WORK/int" 2>&1 &
launcher=$!
for _ in $(seq 300); do [ "$(grep -c "all_reduce ok" "$WORK/int")" -ge 4 ] && break; sleep 0.1; done
records=$(ls /tmp/mtrain-*/worker-*.pgid 2>/dev/null | wc -l)
[ "$records" -ge 2 ] && ok "each agent recorded its process group" || fail "pgid records: $records"
# A background job ignores SIGINT, and so would the `ip netns exec`/`timeout` wrappers: signal the
# launcher process itself (the one mtrain whose command line has --hostfile; agents do not).
for p in $(pgrep -f -- "--hostfile $WORK/hosts"); do
  [ "$(cat /proc/$p/comm 2>/dev/null)" = mtrain ] && kill -INT "$p"
done
wait $launcher; rc=$?
expect_rc 130 "launcher stopped with SIGINT"
expect_in "$WORK/int" "SIGINT: stopping the agent on every node"
no_survivors "$WORK/probe_int.py"
no_survivors "--ssh-agent"
finish
