#!/bin/bash
# The simulated cluster itself: three "machines" with their own addresses, names and sshd.
# Multi-node launch tests build on netns.sh; this one checks the ground they stand on.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/netns.sh"

netns_cluster_up 3 || { finish; exit 1; }

for k in 0 1 2; do
  out=$(netns_exec 0 timeout 10 ssh -F "$NETNS_SSH_CONFIG" -o BatchMode=yes "worker-$k" \
        'ip -4 -o addr show dev eth0; cat /proc/self/stat >/dev/null' 2>&1)
  case "$out" in
    *"$(netns_addr "$k")/24"*) ok "worker-0 reaches worker-$k over ssh at $(netns_addr "$k")" ;;
    *) fail "ssh worker-$k answered: $out" ;;
  esac
done

# Each sshd listens only on its node's address: nothing answers on the hub side or on loopback.
if netns_exec 1 timeout 5 ssh -F "$NETNS_SSH_CONFIG" -o BatchMode=yes -o ConnectTimeout=2 root@127.0.0.1 true 2>/dev/null; then
  fail "sshd in worker-1 answers on 127.0.0.1"
else
  ok "sshd in worker-1 does not listen on loopback"
fi

# (No probe from the machine's own namespace: its default route leads off this machine, and
# tests contact only loopback and the namespaces' own addresses.)

# A remote command with the agent protocol's shape (secret on stdin, pgid announcement).
out=$(printf 'tok-123\n' | netns_exec 0 timeout 10 ssh -F "$NETNS_SSH_CONFIG" -o BatchMode=yes worker-2 \
      'IFS= read -r MTRAIN_RDZV_TOKEN || exit 97; export MTRAIN_RDZV_TOKEN; echo "MTRAIN_AGENT job=j pgid="$$; exec sh -c '"'"'echo pgid=$(ps -o pgid= $$ | tr -d " ") pid=$$ token=$MTRAIN_RDZV_TOKEN'"'"'' 2>&1)
announced=$(echo "$out" | sed -n 's/^MTRAIN_AGENT job=j pgid=//p')
if [ -n "$announced" ] && echo "$out" | grep -q "pgid=$announced pid=$announced token=tok-123"; then
  ok "remote command is its own process group leader and gets the secret from stdin"
else
  fail "remote protocol check: $out"
fi
finish
