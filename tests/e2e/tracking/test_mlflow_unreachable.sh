#!/usr/bin/env bash
# An MLflow server that is down, or that accepts connections and never answers, neither stalls
# nor fails training (issue 42): the run ends 0 in about the time it takes without tracking, with
# one warning, and metrics.jsonl has every step.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/tracking_lib.sh"
job=("${small[@]}" --max-steps 60 --set train.log_interval=2)
steps_logged() { grep -c '"mode":"train"' "$1/metrics.jsonl"; }

t0=$(date +%s.%N)
run_mtrain "$WORK/plain" launch "${job[@]}" --work-dir "$WORK/plain_wd"
plain=$("$PY" -c "import time; print(time.time() - $t0)")
expect_rc 0 "without tracking"

down=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
t0=$(date +%s.%N)
run_mtrain "$WORK/down" launch "${job[@]}" --work-dir "$WORK/down_wd" --set log.mlflow.uri="http://127.0.0.1:$down"
took=$("$PY" -c "import time; print(time.time() - $t0)")
expect_rc 0 "a server that is down"
[ "$(grep -c 'warning: MLflow server' "$WORK/down")" -eq 1 ] && ok "one warning" || fail "warnings: $(grep -c 'warning: MLflow' "$WORK/down")"
expect_in "$WORK/down" "metrics stay in metrics.jsonl"
[ "$(steps_logged "$WORK/down_wd")" -eq 30 ] && ok "metrics.jsonl has every step" || fail "metrics.jsonl: $(steps_logged "$WORK/down_wd") lines"
"$PY" -c "import sys; sys.exit(0 if $took < $plain + 10 else 1)" && ok "down: ${took}s vs ${plain}s without" || fail "down server: ${took}s vs ${plain}s"

# A server that accepts and never answers: each call waits out its timeout in the background.
"$PY" - "$WORK/silent.port" <<'PYEOF' &
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
held = []
s.settimeout(1)
end = time.time() + 200
while time.time() < end:
    try: held.append(s.accept()[0])  # accepted, never read, never answered
    except socket.timeout: pass
PYEOF
silent=$!
for _ in $(seq 50); do [ -s "$WORK/silent.port" ] && break; sleep 0.1; done
t0=$(date +%s.%N)
run_mtrain "$WORK/slow" launch "${job[@]}" --work-dir "$WORK/slow_wd" --set log.mlflow.uri="http://127.0.0.1:$(cat "$WORK/silent.port")"
took=$("$PY" -c "import time; print(time.time() - $t0)")
kill $silent 2>/dev/null; wait $silent 2>/dev/null
expect_rc 0 "a server that never answers"
[ "$(grep -c 'warning: MLflow server' "$WORK/slow")" -eq 1 ] && ok "one warning" || fail "warnings: $(grep -c 'warning: MLflow' "$WORK/slow")"
expect_in "$WORK/slow" "no answer within"
[ "$(steps_logged "$WORK/slow_wd")" -eq 30 ] && ok "metrics.jsonl has every step" || fail "metrics.jsonl: $(steps_logged "$WORK/slow_wd") lines"
# The first call's timeout (10 s) at most is added, at the end, waiting for the status update.
"$PY" -c "import sys; sys.exit(0 if $took < $plain + 25 else 1)" && ok "slow: ${took}s vs ${plain}s without" || fail "slow server: ${took}s vs ${plain}s"
finish
