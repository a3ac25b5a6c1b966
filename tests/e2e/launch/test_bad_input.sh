#!/usr/bin/env bash
# (f) Bad input: one clear error, exit 2, nothing started.
. "$(dirname "$0")/../lib.sh"
check() {  # check NAME EXPECTED_TEXT -- ARGS...
  local name=$1 text=$2; shift 3
  run_mtrain "$WORK/x" "$@"
  expect_rc 2 "$name"
  expect_in "$WORK/x" "$text"
  [ "$(grep -c '^error:' "$WORK/x")" -eq 1 ] && ok "$name: one error paragraph" || fail "$name: expected one error line"
}
export CUDA_VISIBLE_DEVICES=0,1
check "unknown GPU" "GPU 7 is not available" -- launch --gpus 7 -- /bin/true
check "empty selection" "leaves no slots" -- launch --exclude localhost:0,1 -- /bin/true
check "malformed include" "column 13" -- launch --include localhost:0,x -- /bin/true
check "unknown include host" "unknown host 'gpu-9'" -- launch --include gpu-9:0 -- /bin/true
unset CUDA_VISIBLE_DEVICES
check "missing program" "program 'no-such-program-xyz' was not found on PATH" -- launch -- no-such-program-xyz
printf '#!/bin/sh\n' >"$WORK/noexec.sh"
check "not executable" "is not executable" -- launch -- "$WORK/noexec.sh"
# The registry's check, the same for the flag, MTRAIN_NPROC_PER_NODE, a job file and --set.
check "bad rank count" "setting 'launch.nproc_per_node' got 'lots'" -- launch --nproc-per-node lots -- /bin/true

# A taken port: name the port and the process holding it.
"$PY" -c 'import socket,sys,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)' >"$WORK/port" &
holder=$!
for _ in $(seq 50); do [ -s "$WORK/port" ] && break; sleep 0.1; done
port=$(cat "$WORK/port")
check "port in use" "--master-port $port on 127.0.0.1 is already in use by pid $holder" -- launch --master-port "$port" -- /bin/true
kill $holder
finish
