# Shared helpers for the end-to-end tests (sourced). Every wait is bounded.
set -u
MTRAIN=${MTRAIN_BIN_DIR:?}/mtrain
PY=/usr/bin/python3
# The Python whose PyTorch matches the worker's LibTorch (cmake/torch.cmake): the golden tests
# script their models and train PyTorch's reference with it. The 2.x tree's is .venv's python.
TORCH_PY=${MTRAIN_TORCH_PYTHON:-/usr/bin/python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mtrain-e2e.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fails=0

ok() { echo "ok - $*"; }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }
skip() { echo "SKIP: $*"; exit 77; }

# wait_for FILE PATTERN SECONDS: until grep -E finds PATTERN in FILE.
wait_for() {
  for _ in $(seq $(($3 * 10))); do grep -qE -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
# pause_ranks STOP|CONT: every bundled-trainer rank of this test (run folders under $WORK mark them),
# so that what happens next happens mid-run however fast the machine trains.
pause_ranks() { for p in $(pgrep -f "mtrain-worker --job $WORK"); do kill -"$1" "$p" 2>/dev/null; done; }

# run_mtrain OUTFILE ARGS... : runs mtrain with a 120 s bound, stdout+stderr to OUTFILE, sets rc.
run_mtrain() {
  local out=$1; shift
  timeout -k 5 120 "$MTRAIN" "$@" >"$out" 2>&1
  rc=$?
}

expect_rc() { [ "$rc" -eq "$1" ] && ok "$2 (exit $rc)" || fail "$2: expected exit $1, got $rc"; }
expect_in() { grep -qF -- "$2" "$1" && ok "output has '$2'" || { fail "output lacks '$2'"; sed 's/^/    | /' "$1"; }; }
expect_not_in() { grep -qF -- "$2" "$1" && { fail "output has '$2'"; sed 's/^/    | /' "$1"; } || ok "output lacks '$2'"; }

# no_survivors MARKER: no process has MARKER in its command line (waits up to 3 s for exits).
no_survivors() {
  for _ in $(seq 30); do
    pgrep -f -- "$1" >/dev/null || { ok "no process of '$1' survives"; return; }
    sleep 0.1
  done
  fail "processes of '$1' survive: $(pgrep -af -- "$1" | tr '\n' ';')"
  pkill -9 -f -- "$1"
}

# bound PID SECONDS: SIGKILLs PID if it outlives SECONDS (for a launcher run in the background so a
# test can signal it — `timeout` would take the signal itself); sets $watchdog, kill it after wait.
bound() { ( sleep "$2"; kill -9 "$1" 2>/dev/null ) >/dev/null 2>&1 & watchdog=$!; }

# refused EXPECTED_TEXT ARGS... : `mtrain launch ARGS` exits 2 (bad input) and says EXPECTED_TEXT.
refused() {
  local text=$1; shift
  run_mtrain "$WORK/refused.out" launch "$@"
  expect_rc 2 "refused: $*"
  expect_in "$WORK/refused.out" "$text"
}

need_worker_torch() { "$TORCH_PY" -c 'import torch' 2>/dev/null || skip "$TORCH_PY has no torch (scripts/python-env, or apt-get install python3-torch)"; }
need_torch() { "$PY" -c 'import torch.distributed' 2>/dev/null || skip "/usr/bin/python3 has no torch (apt-get install python3-torch)"; }

finish() {
  if [ "$fails" -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
  echo "all checks passed"
}
