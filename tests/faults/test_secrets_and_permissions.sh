#!/usr/bin/env bash
# Security hygiene of a running job: the rendezvous token (MTRAIN_RDZV_TOKEN) never appears in
# any process's command line (visible to every user in `ps`), in the console or in rank logs;
# nothing mtrain writes (rank logs, and with the bundled trainer: metrics, checkpoints) is
# world-writable, even under a permissive umask.
. "$(dirname "$0")/lib.sh"
secret="faults-secret-$RANDOM$RANDOM-0123456789abcdef"
umask 000
# With the node rendezvous (where the token is used) when this build has it.
rdzv=()
if launch_has_flag --rdzv-backend; then
  port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  rdzv=(--rdzv-backend mtrain --rdzv-endpoint "127.0.0.1:$port" --nnodes 1)
fi
MTRAIN_RDZV_TOKEN=$secret "${tagged[@]}" "$MTRAIN" launch "${rdzv[@]}" --nproc-per-node 2 --log-dir "$WORK/logs" --tee -- \
  bash -c 'echo "rank $RANK up"; exec sleep 300' >"$WORK/out" 2>&1 &
launcher=$!
wait_for 20 count_tagged_at_least 3 || fail "job running" ">= 3 processes" "$(tagged_pids | wc -l)"
leaks=""
for p in $(tagged_pids); do
  tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$secret" && leaks="$leaks $p"
done
[ -z "$leaks" ] && ok "token in no command line${rdzv:+ (rendezvous mtrain)}" "none" "none" \
  || fail "token in no command line${rdzv:+ (rendezvous mtrain)}" "none" "pids$leaks"
kill -TERM "$launcher"
timeout 30 tail --pid="$launcher" -f /dev/null
wait "$launcher"
if grep -rqF "$secret" "$WORK/out" "$WORK/logs" 2>/dev/null; then fail "token in no output or log" "absent" "present"
else ok "token in no output or log" "absent" "absent"; fi
# Rank folders and logs (lib/launch/output.cpp: <run folder>/attempt_<k>/<rank>/*.log), then the
# folders above them that mtrain creates when missing: --log-dir, the job's folder and, with the
# node rendezvous, the node's (lib/launch/launch.cpp).
[ -n "$(find "$WORK/logs" -type f 2>/dev/null)" ] || fail "rank logs written" "files" "none"
ww=$(find "$WORK/logs" -path '*/attempt_*' -perm -o+w ! -type l 2>/dev/null | sed "s|^$WORK|\$WORK|")
[ -z "$ww" ] && ok "no world-writable rank log file or folder (umask 000)" "none" "none" \
  || fail "no world-writable rank log file or folder (umask 000)" "none" "$(echo $ww)"
ww=$(find "$WORK/logs" ! -path '*/attempt_*' -perm -o+w ! -type l 2>/dev/null | sed "s|^$WORK|\$WORK|")
[ -z "$ww" ] && ok "no world-writable --log-dir, job or node folder (umask 000)" "none" "none" \
  || fail "no world-writable --log-dir, job or node folder (umask 000)" "none" "$(echo $ww)"
no_survivors

if [ -x "$WORKER" ]; then
  run_mtrain 300 "$WORK/train.out" launch $(trainer_args "$WORK/wd" --max-steps 2 --checkpoint-interval 1)
  expect_rc 0 "bundled trainer run under umask 000"
  ww=$(find "$WORK/wd" -perm -o+w ! -type l 2>/dev/null)
  [ -z "$ww" ] && ok "no world-writable metrics/checkpoint file or folder" "none" "none" \
    || fail "no world-writable metrics/checkpoint file or folder" "none" "$(echo $ww)"
  no_survivors
else
  record "bundled trainer outputs" "" "no mtrain-worker in this build" SKIP
fi
finish
