#!/usr/bin/env bash
# The mtrain store's single point of failure said as such (issue 43 item 3): two node agents
# (--rdzv-backend mtrain, --nnodes 1:2 --max-restarts 2) run a shell rank; the node holding the
# store (the endpoint's) is SIGKILLed with its rank. The survivor cannot re-form and says that the
# store's host is lost, naming it and recommending etcd, instead of "did not answer: Connection
# refused". Torch-free; about 10 s.
. "$(dirname "$0")/../lib.sh"
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
export MTRAIN_RDZV_TOKEN=store-lost-0123456789abcdef
PORT=$(free_port)
start_node() {
  setsid timeout -k 5 60 "$MTRAIN" launch --rdzv-backend mtrain --rdzv-endpoint "127.0.0.1:$PORT" --nnodes 1:2 \
    --max-restarts 2 --rdzv-id lost --node-name "n$1" --rdzv-last-call 1 --node-timeout 2 --rdzv-timeout 20 \
    --master-port "$(free_port)" --nproc-per-node 1 -- sleep 40 >"$WORK/node$1" 2>&1 &
  eval "agent$1=\$!"
}
start_node 0
wait_for "$WORK/node0" "listening on" 10 || fail "node 0 holds the store"
start_node 1
wait_for "$WORK/node1" "is node [01] of 2" 20 || fail "the job did not form"
kill -9 -- "-$agent0"
wait "$agent1"; rc=$?
[ "$rc" != 0 ] && ok "the survivor ends (exit $rc)" || fail "survivor exit 0"
grep -q "the rendezvous store's host 127.0.0.1 (127.0.0.1:$PORT) is lost" "$WORK/node1" \
  && ok "the lost store host is named as such" || { fail "no store-host message"; sed 's/^/    | /' "$WORK/node1"; }
grep -q -- "--rdzv-backend etcd" "$WORK/node1" && ok "etcd is recommended" || fail "etcd not recommended"
finish
