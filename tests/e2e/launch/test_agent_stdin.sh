#!/usr/bin/env bash
# An ssh agent (`--ssh-agent`) whose stdin reaches EOF — the launcher's ssh connection closed —
# stops even while it is still waiting in the rendezvous, and leaves no process-group record and
# no run folder in TMPDIR.
. "$(dirname "$0")/../lib.sh"
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export XDG_RUNTIME_DIR="$WORK/run"
mkdir -p "$XDG_RUNTIME_DIR" "$WORK/tmp"
# Nothing listens on $port (the store would be the launcher's): the agent keeps trying to join.
TMPDIR=$WORK/tmp MTRAIN_RDZV_TOKEN=0123456789abcdef0123456789abcdef timeout -k 5 60 "$MTRAIN" launch --ssh-agent --job-id e2e-stdin \
  --rdzv-backend mtrain --rdzv-endpoint "127.0.0.1:$port" --nnodes 2 --node-name node-a -- /bin/true \
  >"$WORK/out" 2>&1 < <(sleep 1.5) &
agent=$!
recorded=0
for _ in $(seq 50); do [ -s "$WORK/run/mtrain-e2e-stdin/node-a.pgid" ] && { recorded=1; break; }; sleep 0.05; done
[ "$recorded" -eq 1 ] && ok "the agent recorded its process group" || fail "no pgid record"
pgid=$(cat "$WORK/run/mtrain-e2e-stdin/node-a.pgid" 2>/dev/null)
[ "$pgid" = "$(ps -o pgid= "$(pgrep -P "$agent" -x mtrain || echo "$agent")" | tr -d ' ')" ] \
  && ok "the record holds the agent's process group" || fail "record $pgid is not the agent's group"
wait $agent; rc=$?
expect_rc 143 "agent after stdin EOF while joining"
expect_in "$WORK/out" "stdin reached EOF"
[ ! -e "$WORK/run/mtrain-e2e-stdin/node-a.pgid" ] && ok "the record is removed" || fail "the record is left behind"
# The agent's private run folder (<TMPDIR>/e2e-stdin.<random>/node-a) goes with it.
for _ in $(seq 50); do [ -z "$(ls -A "$WORK/tmp")" ] && break; sleep 0.1; done
[ -z "$(ls -A "$WORK/tmp")" ] && ok "no run folder left in TMPDIR" || fail "run folder left in TMPDIR: $(ls -A "$WORK/tmp")"
finish
