#!/usr/bin/env bash
# Will it fit, at launch: a job whose estimate exceeds the device memory is refused before any
# rank starts, with the paragraph (needs per rank, what there is, the two cheapest changes that
# fit) and exit 2; --force starts it anyway; --strategy auto picks the fastest strategy that
# fits, says so in one line and records it in the run folder (estimate.json), and the run uses it.
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
model=(--model gpt --set model.n_layer=6 --set model.n_embd=512 --set model.n_head=8 --set model.block_size=64
  --batch-size 4 --set train.threads=1)

# The table for 2 ranks, and a device memory between what ddp and zero3 need.
run_mtrain "$WORK/est.json" estimate --format json --nproc-per-node 2 "${model[@]}"
expect_rc 0 "mtrain estimate --format json"
# The launch checks with the estimate's own numbers (one memory model, issue 45 item 3): a memory
# between ddp's and zero3's totals refuses ddp and lets auto choose a sharded strategy.
read -r mem mem_states < <("$PY" - "$WORK/est.json" <<'PYEOF'
import json, sys
e = json.load(open(sys.argv[1]))
t = {r["label"]: r["bytes_per_rank"]["total"] for r in e["rows"]}
st = {r["label"]: sum(r["bytes_per_rank"][k] for k in ("params", "grads", "optimizer")) for r in e["rows"]}
assert t["ddp"] > t["zero3"] and st["ddp"] > st["zero3"], (t, st)
print(int((t["ddp"] + t["zero3"]) / 2), int((st["ddp"] + st["zero3"]) / 2))
PYEOF
) || { fail "the estimate's rows"; finish; }
[ -n "$mem_states" ] || { fail "the estimate's rows"; finish; }
ok "ddp needs more than zero3 at world 2; device memory $mem bytes (totals), $mem_states (model states)"

run_mtrain "$WORK/est.txt" estimate --nproc-per-node 2 --device-memory "$mem" "${model[@]}"
expect_rc 0 "mtrain estimate (text)"
for t in "iB per rank)      params" "fsdp/SHARD_GRAD_OP" "Activations: " "measured: one forward+backward" "Recommended: "; do
  expect_in "$WORK/est.txt" "$t"
done

# Refused: ddp does not fit.
run_mtrain "$WORK/refused.out" launch --nproc-per-node 2 --master-port 0 --strategy ddp --device-memory "$mem" \
  --max-steps 1 --work-dir "$WORK/w_refused" "${model[@]}"
expect_rc 2 "a job that does not fit is refused"
cat "$WORK/refused.out"
expect_in "$WORK/refused.out" "this job does not fit: ddp needs about"
expect_in "$WORK/refused.out" "and each of the 2 rank(s) has"
expect_in "$WORK/refused.out" "The cheapest changes that fit: \`--strategy"
expect_in "$WORK/refused.out" "--force starts it anyway"
[ -e "$WORK/w_refused" ] && fail "a rank started (work dir exists)" || ok "no rank started"

# --force goes ahead.
run_mtrain "$WORK/forced.out" launch --nproc-per-node 2 --master-port 0 --strategy ddp --device-memory "$mem" \
  --force --max-steps 1 --work-dir "$WORK/w_forced" "${model[@]}"
expect_rc 0 "--force starts it anyway"

# auto: the fastest that fits, said in one line, recorded in the run folder, and used.
run_mtrain "$WORK/auto.out" launch --nproc-per-node 2 --master-port 0 --strategy auto --device-memory "$mem" \
  --max-steps 1 --work-dir "$WORK/w_auto" --log-dir "$WORK/logs" "${model[@]}"
expect_rc 0 "--strategy auto"
expect_in "$WORK/auto.out" "mtrain: --strategy auto chose "
chosen=$(grep -o 'auto chose [a-z0-9]*' "$WORK/auto.out" | head -1 | awk '{print $3}')
[ -n "$chosen" ] && [ "$chosen" != ddp ] && ok "auto chose $chosen, not ddp" || fail "auto chose '$chosen'"
# The launcher's run folder: <--log-dir>/<job id>/estimate.json.
"$PY" - "$(find "$WORK/logs" -name estimate.json | head -1)" "$(find "$WORK/w_auto" -name summary.json | head -1)" "$chosen" <<'PYEOF' \
  && ok "estimate.json records the choice and the run used it" || fail "estimate.json / summary.json"
import json, sys
e, s, chosen = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
assert e["auto"]["chosen"].split("/")[0] == chosen, e["auto"]
assert "the fastest that fits" in e["auto"]["why"], e["auto"]
assert s["strategy"].startswith(chosen), s["strategy"]
PYEOF

# Nothing fits: auto is refused with the same kind of paragraph.
run_mtrain "$WORK/none.out" launch --nproc-per-node 2 --master-port 0 --strategy auto --device-memory 1MiB \
  --max-steps 1 --work-dir "$WORK/w_none" "${model[@]}"
expect_rc 2 "auto with nothing that fits"
expect_in "$WORK/none.out" "does not fit"
finish
