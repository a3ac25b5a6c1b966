#!/usr/bin/env bash
# Static multi-node on one machine: two launchers (--nnodes 2 --node-rank 0/1) form one world of 4.
. "$(dirname "$0")/../lib.sh"
need_torch
here=$(dirname "$0")
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
common=(launch --nnodes 2 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$port")
timeout -k 5 120 "$MTRAIN" "${common[@]}" --node-rank 1 -- "$PY" "$here/allreduce.py" >"$WORK/n1" 2>&1 &
n1=$!
run_mtrain "$WORK/n0" "${common[@]}" --node-rank 0 -- "$PY" "$here/allreduce.py"
expect_rc 0 "node 0"
wait $n1; rc=$?
expect_rc 0 "node 1"
expect_in "$WORK/n0" "rank 1/4 node 0 local 1: all_reduce ok"
expect_in "$WORK/n1" "rank 3/4 node 1 local 1: all_reduce ok"

# Uneven static nodes from a hostfile: node 0 runs 1 rank, node 1 runs 2; ranks 0 | 1 2.
printf '127.0.0.1 slots=1\nlocalhost slots=2  # two names of this machine, two "nodes"\n' >"$WORK/hosts"
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
timeout -k 5 120 "$MTRAIN" launch --hostfile "$WORK/hosts" --node-rank 1 --master-port "$port" \
  -- "$PY" "$here/allreduce.py" >"$WORK/u1" 2>&1 &
u1=$!
run_mtrain "$WORK/u0" launch --hostfile "$WORK/hosts" --node-rank 0 --master-port "$port" -- "$PY" "$here/allreduce.py"
expect_rc 0 "uneven node 0"
wait $u1; rc=$?
expect_rc 0 "uneven node 1"
expect_in "$WORK/u0" "[127.0.0.1:0] rank 0/3 node 0 local 0: all_reduce ok"
expect_in "$WORK/u1" "[localhost:2] rank 2/3 node 1 local 1: all_reduce ok"
finish
