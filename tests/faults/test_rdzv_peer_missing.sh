#!/usr/bin/env bash
# Scenario: dynamic rendezvous for 2 nodes, only one arrives. The join timeout fails the job
# with a report saying what was missing; the lone node's ranks never start or are stopped.
. "$(dirname "$0")/lib.sh"
need_flag --rdzv-backend "multi-node brief H3 item 3"
need_flag --rdzv-timeout "multi-node brief H3 item 3"
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export MTRAIN_RDZV_TOKEN=faults-token-0123456789abcdef
run_mtrain 120 "$WORK/out" launch --rdzv-backend mtrain --rdzv-endpoint "127.0.0.1:$port" --nnodes 2 \
  --rdzv-timeout 3 --nproc-per-node 1 -- sleep 300
expect_rc_not "one of two nodes joins"
expect_any "$WORK/out" "report says the rendezvous timed out" "timed out" "timeout"
expect_any "$WORK/out" "report says how many nodes were missing" "1/2" "2 nodes" "waiting for"
no_survivors
finish
