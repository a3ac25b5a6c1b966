# Shared by the etcd rendezvous e2e tests (sourced after ../lib.sh): a real three-member etcd
# cluster on 127.0.0.1 (free ports, data dirs under $WORK), always stopped when the test exits.
command -v etcd >/dev/null && command -v etcdctl >/dev/null || skip "etcd is not installed (apt-get install etcd-server etcd-client)"
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
export ETCDCTL_API=3
etcd_pids=()
stop_etcd() { for p in "${etcd_pids[@]}"; do kill -9 "$p" 2>/dev/null; done; }
trap 'stop_etcd; rm -rf "$WORK"' EXIT
# start_etcd: members e0 e1 e2; ETCD_CLIENT[k] their client addresses, ETCD_ENDPOINTS the list.
start_etcd() {
  local cluster="" k
  for k in 0 1 2; do ETCD_CLIENT[$k]=127.0.0.1:$(free_port); ETCD_PEER[$k]=127.0.0.1:$(free_port); done
  for k in 0 1 2; do cluster="$cluster${cluster:+,}e$k=http://${ETCD_PEER[$k]}"; done
  for k in 0 1 2; do
    etcd --name "e$k" --data-dir "$WORK/etcd$k" --listen-client-urls "http://${ETCD_CLIENT[$k]}" \
      --advertise-client-urls "http://${ETCD_CLIENT[$k]}" --listen-peer-urls "http://${ETCD_PEER[$k]}" \
      --initial-advertise-peer-urls "http://${ETCD_PEER[$k]}" --initial-cluster "$cluster" \
      --initial-cluster-state new --initial-cluster-token "mtrain-test-$$" >"$WORK/etcd$k.log" 2>&1 &
    etcd_pids[$k]=$!
  done
  ETCD_ENDPOINTS="${ETCD_CLIENT[0]},${ETCD_CLIENT[1]},${ETCD_CLIENT[2]}"
  for _ in $(seq 100); do
    etcdctl --endpoints "$ETCD_ENDPOINTS" endpoint health >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "etcd did not become healthy:"; tail -5 "$WORK"/etcd*.log; exit 1
}
# keys_under PREFIX: how many keys the cluster holds there.
keys_under() { etcdctl --endpoints "$ETCD_ENDPOINTS" get --prefix --keys-only "$1" | grep -c . ; }
