# Helpers of the peers tests (sourced after ../lib.sh): the peers environment (scripts/python-env,
# python/requirements.txt) is found through MTRAIN_PEERS_PYTHON, which CTest sets for the tests
# labelled `peers`; a test without it, or without a module it needs, is skipped (exit 77).
PEERS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# need_peers MODULE...: the peers python has these modules (found without importing them), and it
# comes first on PATH as in an activated environment (python3, torchrun, accelerate, deepspeed).
need_peers() {
  [ -n "${MTRAIN_PEERS_PYTHON:-}" ] || skip "MTRAIN_PEERS_PYTHON is unset: no peers environment (scripts/python-env makes one)"
  [ -x "$MTRAIN_PEERS_PYTHON" ] || skip "MTRAIN_PEERS_PYTHON=$MTRAIN_PEERS_PYTHON is not an executable"
  local m
  for m in "$@"; do
    "$MTRAIN_PEERS_PYTHON" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$m') is None)" 2>/dev/null \
      || skip "$MTRAIN_PEERS_PYTHON has no module $m (python/requirements.txt pins it; rerun scripts/python-env)"
  done
  PEERS_BIN=$(dirname "$MTRAIN_PEERS_PYTHON")
  export PATH="$PEERS_BIN:$PATH" VIRTUAL_ENV
  VIRTUAL_ENV=$(dirname "$PEERS_BIN")
  PPY=$MTRAIN_PEERS_PYTHON
  unset MTRAIN_PYTHON PYTHONPATH
  export HF_HOME=$WORK/hf_home PYTHONDONTWRITEBYTECODE=1  # no saved accelerate default config
  # DeepSpeed's CPU op, built once by scripts/python-env into the environment (not at a test's cost).
  export TORCH_EXTENSIONS_DIR=$VIRTUAL_ENV/torch_extensions
}

free_port() { "$PPY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run_peer OUTFILE SECONDS CMD...: a real tool's command line, bounded, stdout+stderr to OUTFILE, sets rc.
run_peer() {
  local out=$1 secs=$2; shift 2
  timeout -k 5 "$secs" "$@" >"$out" 2>&1
  rc=$?
}

# same_weights A B [ATOL] WHAT: two saved state dicts hold the same tensors (bitwise by default).
same_weights() {
  local line
  if line=$("$PPY" "$PEERS_DIR/compare_weights.py" "$1" "$2" ${3:+"$3"} 2>&1); then ok "$4: $line"
  else fail "$4: $line"; fi
}

# falling_loss FILE WHAT: the line 'losses a b … z' in FILE falls (last < first).
falling_loss() {
  local l
  l=$(grep -E 'losses [0-9]' "$1" | tail -1 | sed 's/.*losses //')
  [ -n "$l" ] && awk -v s="$l" 'BEGIN { n = split(s, v, " "); exit !(n > 1 && v[n] < v[1]) }' \
    && ok "$2: loss falls ($(echo "$l" | awk '{print $1 " -> " $NF}'))" || fail "$2: no falling loss in $1: $l"
}

# side_by_side NAME SECONDS TOOL_CMD... -- MTRAIN_ARGS...: a training script under its own launcher
# (TOOL_CMD) and under `mtrain launch MTRAIN_ARGS`, each with TRAIN_OUT=$WORK/NAME.{tool,mtrain}:
# both exit 0 with a falling loss, no rank of the script is left, and the weights are identical.
side_by_side() {
  local name=$1 secs=$2; shift 2
  local tool=() ; while [ "$1" != "--" ]; do tool+=("$1"); shift; done; shift
  mkdir -p "$WORK/$name.tool" "$WORK/$name.mtrain"
  TRAIN_OUT=$WORK/$name.tool run_peer "$WORK/$name.tool.out" "$secs" "${tool[@]}"
  expect_rc 0 "$name: ${tool[*]}"
  [ "$rc" -eq 0 ] || tail -30 "$WORK/$name.tool.out" | sed 's/^/    | /'
  falling_loss "$WORK/$name.tool.out" "$name under ${tool[0]}"
  TRAIN_OUT=$WORK/$name.mtrain run_peer "$WORK/$name.mtrain.out" "$secs" "$MTRAIN" launch "$@"
  expect_rc 0 "$name: mtrain launch $*"
  [ "$rc" -eq 0 ] || tail -30 "$WORK/$name.mtrain.out" | sed 's/^/    | /'
  falling_loss "$WORK/$name.mtrain.out" "$name under mtrain launch"
  no_survivors "$WORK/train_"
  same_weights "$WORK/$name.tool/weights.pt" "$WORK/$name.mtrain/weights.pt" "${SAME_ATOL:-}" "$name: weights under ${tool[0]} and mtrain launch"
}
