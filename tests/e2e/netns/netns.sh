# Simulated cluster for multi-node end-to-end tests (sourced after tests/e2e/lib.sh).
#
#   netns_cluster_up N   creates N network namespaces worker-0..N-1 (each on its own veth into a
#                        bridge that lives in a private hub namespace: the machine's own network
#                        is never touched), gives worker-k the address 10.$NETNS_NET.0.(k+1)/24,
#                        a hosts file naming every worker, and a real OpenSSH server listening
#                        only on that address, reachable with $NETNS_SSH_CONFIG (key login).
#   netns_exec K CMD…    runs CMD inside worker-K's namespace (as that "machine")
#   netns_pids K         the processes living in worker-K's namespace
#   netns_cluster_down   stops the sshd's and removes namespaces and files (also on EXIT)
#
# It skips (exit 77, with the reason) without root, without `ip netns`, or without
# /usr/sbin/sshd (apt-get install openssh-server). Names carry this shell's pid so parallel
# runs do not collide.

NETNS_TAG="mt$$"
NETNS_NET=$(( ($$ % 200) + 20 ))   # 10.<20..219>.0.0/24, one subnet per run
NETNS_DIR=""
NETNS_COUNT=0
NETNS_SSH_CONFIG=""
NETNS_SSHD_PIDS=""
NETNS_MTRAIN_SSH=()

netns_name() { echo "${NETNS_TAG}-w$1"; }
netns_addr() { echo "10.${NETNS_NET}.0.$(( $1 + 1 ))"; }

netns_require() {
  [ "$(id -u)" -eq 0 ] || skip "network namespaces need root (run the e2e tests as root)"
  command -v ip >/dev/null || skip "no 'ip' command (apt-get install iproute2)"
  [ -x /usr/sbin/sshd ] || skip "no OpenSSH server (apt-get install openssh-server)"
  command -v ssh-keygen >/dev/null || skip "no ssh-keygen (apt-get install openssh-client)"
  ip netns add "${NETNS_TAG}-probe" 2>/dev/null || skip "cannot create network namespaces here (ip netns add refused)"
  ip netns del "${NETNS_TAG}-probe"
}

netns_exec() { local k=$1; shift; ip netns exec "$(netns_name "$k")" "$@"; }
netns_pids() { ip netns pids "$(netns_name "$1")"; }

netns_cluster_up() {
  local n=$1 k ns hub="${NETNS_TAG}-hub"
  netns_require
  NETNS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/mtrain-netns.XXXXXX")
  NETNS_COUNT=$n
  trap 'netns_cluster_down; rm -rf "$WORK"' EXIT
  ip netns add "$hub"
  ip -n "$hub" link add br0 type bridge
  ip -n "$hub" link set br0 up

  # One client key for the whole cluster, one host key per node, one ssh config for the tests.
  ssh-keygen -q -t ed25519 -N '' -f "$NETNS_DIR/id" -C mtrain-e2e
  NETNS_SSH_CONFIG="$NETNS_DIR/ssh_config"
  {
    echo "Host worker-*"
    echo "  User root"
    echo "  IdentityFile $NETNS_DIR/id"
    echo "  IdentitiesOnly yes"
    echo "  UserKnownHostsFile $NETNS_DIR/known_hosts"
    echo "  StrictHostKeyChecking no"
    echo "  LogLevel ERROR"
  } >"$NETNS_SSH_CONFIG"
  # The same settings as flags for `mtrain launch` (its ssh runs without -F).
  NETNS_MTRAIN_SSH=(--ssh-option "IdentityFile=$NETNS_DIR/id" --ssh-option IdentitiesOnly=yes
                    --ssh-option "UserKnownHostsFile=$NETNS_DIR/known_hosts" --ssh-option StrictHostKeyChecking=no
                    --ssh-option LogLevel=ERROR --ssh-option ConnectTimeout=3)
  cp "$NETNS_DIR/id.pub" "$NETNS_DIR/authorized_keys"
  chmod 600 "$NETNS_DIR/authorized_keys"
  mkdir -p /run/sshd

  local hosts="$NETNS_DIR/hosts"
  { echo "127.0.0.1 localhost"; for k in $(seq 0 $((n - 1))); do echo "$(netns_addr "$k") worker-$k"; done; } >"$hosts"

  for k in $(seq 0 $((n - 1))); do
    ns=$(netns_name "$k")
    ip netns add "$ns"
    # `ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts: per-"machine" names.
    mkdir -p "/etc/netns/$ns"
    cp "$hosts" "/etc/netns/$ns/hosts"
    echo "worker-$k" >"/etc/netns/$ns/hostname"
    ip link add "v${NETNS_TAG}w${k}" type veth peer name eth0 netns "$ns"
    ip link set "v${NETNS_TAG}w${k}" netns "$hub"
    ip -n "$hub" link set "v${NETNS_TAG}w${k}" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$(netns_addr "$k")/24" dev eth0
    ip -n "$ns" link set eth0 up

    ssh-keygen -q -t ed25519 -N '' -f "$NETNS_DIR/host_key_$k"
    cat >"$NETNS_DIR/sshd_config_$k" <<CFG
ListenAddress $(netns_addr "$k"):22
HostKey $NETNS_DIR/host_key_$k
PidFile $NETNS_DIR/sshd_$k.pid
AuthorizedKeysFile $NETNS_DIR/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AcceptEnv none
PrintMotd no
CFG
    # In the foreground (-D) as this shell's child, so teardown can kill and reap it.
    ip netns exec "$ns" /usr/sbin/sshd -D -f "$NETNS_DIR/sshd_config_$k" -E "$NETNS_DIR/sshd_$k.log" &
    NETNS_SSHD_PIDS="$NETNS_SSHD_PIDS $!"
  done

  # Bounded wait until every node answers over ssh from worker-0.
  for k in $(seq 0 $((n - 1))); do
    local up=0
    for _ in $(seq 50); do
      if netns_exec 0 timeout 5 ssh -F "$NETNS_SSH_CONFIG" -o BatchMode=yes -o ConnectTimeout=2 \
           "worker-$k" true 2>/dev/null; then up=1; break; fi
      sleep 0.1
    done
    [ "$up" -eq 1 ] || { fail "worker-$k is not reachable over ssh"; sed 's/^/    | /' "$NETNS_DIR/sshd_$k.log"; return 1; }
  done
}

netns_cluster_down() {
  local k pid
  [ -n "$NETNS_DIR" ] || return 0
  for pid in $NETNS_SSHD_PIDS; do kill "$pid" 2>/dev/null; done
  for pid in $NETNS_SSHD_PIDS; do wait "$pid" 2>/dev/null; done
  NETNS_SSHD_PIDS=""
  for k in $(seq 0 $((NETNS_COUNT - 1))); do
    ip netns del "$(netns_name "$k")" 2>/dev/null
    rm -rf "/etc/netns/$(netns_name "$k")"
  done
  ip netns del "${NETNS_TAG}-hub" 2>/dev/null
  rm -rf "$NETNS_DIR"
  NETNS_DIR=""
}
