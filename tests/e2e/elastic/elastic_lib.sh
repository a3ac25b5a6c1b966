# Shared by the elastic e2e tests (sourced after ../lib.sh): the bundled trainer under node
# agents on loopback. Every wait is bounded.
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
"$PY" -c 'import torch' 2>/dev/null || skip "/usr/bin/python3 has no torch (apt-get install python3-torch)"
export TMPDIR="$WORK"  # run folders (job.json) land here: they mark this test's workers
# A tiny GPT, SGD, a checkpoint every 5 steps: a run takes seconds on a busy 2-core machine.
tiny_job=(--strategy zero3 --optim sgd --lr 0.05 --batch-size 2
          --set model.n_layer=1 --set model.n_embd=16 --set model.block_size=8 --set data.num_samples=4000
          --checkpoint-interval 5 --set checkpoint.keep=100 --seed 3 --set train.threads=1)
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
# within LIMIT WHAT SECONDS: a wall-clock bound, checked with the figure printed.
within() {
  if [ "$(echo "$3 <= $1" | bc)" = 1 ]; then ok "$2 in $3 s (bound $1 s)"; else fail "$2 took $3 s (bound $1 s)"; fi
}
