#!/usr/bin/env bash
# `mtrain launch --nproc-per-node 2 --strategy ddp` with no program runs the bundled trainer:
# the loss falls, and summary.json / metrics.jsonl / checkpoints / model.pt are written.
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
run_mtrain "$WORK/out" launch --nproc-per-node 2 --strategy ddp --max-steps 30 --master-port auto \
  --set model.n_layer=2 --set model.n_embd=64 --set train.batch_size=8 --work-dir "$WORK/wd"
expect_rc 0 "bundled trainer on 2 ranks"
expect_in "$WORK/out" "Iter(train) [30/30]"
expect_not_in "$WORK/out" "[$(hostname):1] Iter(train)"   # only rank 0 logs
"$PY" - "$WORK/wd" <<'PYEOF' && ok "outputs are complete and the loss falls" || fail "trainer outputs"
import json, os, sys
wd = sys.argv[1]
s = json.load(open(os.path.join(wd, "summary.json")))
for k in ["strategy", "world_size", "num_params", "steps", "final_loss", "model_state_bytes_per_rank",
          "comm_per_step", "wire_bytes_per_step", "peak_memory_bytes", "step_time_median_s", "throughput"]:
    assert k in s, k
assert s["strategy"] == "ddp" and s["world_size"] == 2 and s["steps"] == 30
rows = [json.loads(l) for l in open(os.path.join(wd, "metrics.jsonl"))]
losses = [r["loss"] for r in rows if "loss" in r and r.get("mode", "train") == "train"]
assert len(losses) >= 2 and losses[-1] < losses[0] - 0.5, losses
assert os.path.exists(os.path.join(wd, "model.pt"))
PYEOF
finish
