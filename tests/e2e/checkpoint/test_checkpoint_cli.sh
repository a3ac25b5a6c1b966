#!/usr/bin/env bash
# `mtrain checkpoint inspect|verify|consolidate` on a real 2-rank checkpoint: JSON report,
# damage named with expected vs actual, consolidated weights equal model.pt in torch.load, and
# `--resume auto` falling back past a damaged newest checkpoint.
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_torch
small=(--set model.n_layer=2 --set model.n_embd=32 --set model.block_size=16 --set train.batch_size=4
       --set train.log_interval=3 --set checkpoint.interval=3 --set checkpoint.keep=3)
run_mtrain "$WORK/train" launch --nproc-per-node 2 --strategy ddp --max-steps 6 --master-port auto \
  "${small[@]}" --work-dir "$WORK/wd"
expect_rc 0 "2-rank training with checkpoints at steps 3 and 6"
ck="$WORK/wd/checkpoints/step_6"

run_mtrain "$WORK/inspect.json" checkpoint inspect "$ck" --format json
expect_rc 0 "inspect --format json"
"$PY" - "$WORK/inspect.json" <<'PYEOF' && ok "inspect reports strategy, world, step, tensors, verification" || fail "inspect json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["strategy"] == "ddp" and r["world_size"] == 2 and r["step"] == 6, r
assert r["verification"]["ok"] is True and r["verification"]["checksums"] is True
assert len(r["verification"]["files"]) == 2
names = [t["name"] for t in r["tensors"]]
assert "model/wte.weight" in names and any(n.startswith("optim/") for n in names), names
assert r["num_params"] > 0 and all(t["bytes"] > 0 for t in r["tensors"])
PYEOF
run_mtrain "$WORK/inspect.txt" checkpoint inspect "$ck"
expect_in "$WORK/inspect.txt" "strategy ddp, world size 2, step 6"
expect_in "$WORK/inspect.txt" "verification: ok (sizes and CRC-32C)"

run_mtrain "$WORK/verify" checkpoint verify "$ck"
expect_rc 0 "verify a good checkpoint"
expect_in "$WORK/verify" "ok (2 files"

run_mtrain "$WORK/cons" checkpoint consolidate "$ck" -o "$WORK/fp32.pt"
expect_rc 0 "consolidate"
run_mtrain "$WORK/cons16" checkpoint consolidate "$ck" -o "$WORK/bf16.pt" --dtype bf16
expect_rc 0 "consolidate --dtype bf16"
"$PY" - "$WORK/fp32.pt" "$WORK/wd/model.pt" "$WORK/bf16.pt" <<'PYEOF' && ok "consolidated state dict equals model.pt (torch.load)" || fail "consolidated weights differ"
import sys, torch
a, b, c = (torch.load(p) for p in sys.argv[1:4])
assert list(a) == list(b), (list(a), list(b))
for k in a:
    assert a[k].dtype == torch.float32 and a[k].shape == b[k].shape and torch.equal(a[k], b[k]), k
    assert c[k].dtype == torch.bfloat16 and torch.equal(c[k], b[k].to(torch.bfloat16)), k
PYEOF

run_mtrain "$WORK/usage" checkpoint consolidate "$ck"
expect_rc 2 "consolidate without -o is a usage error"
run_mtrain "$WORK/nodir" checkpoint verify "$WORK/none"
expect_rc 2 "verify of a missing folder"
expect_in "$WORK/nodir" "$WORK/none"

# Damage: a flipped byte in step_6, a truncated shard in step_3 (copied aside first).
cp -r "$WORK/wd/checkpoints/step_3" "$WORK/step_3_copy"
"$PY" - "$ck/shard_rank1.pt" <<'PYEOF'
import os, sys
p = sys.argv[1]; n = os.path.getsize(p)
with open(p, "r+b") as f:
    f.seek(n // 2); b = f.read(1); f.seek(n // 2); f.write(bytes([b[0] ^ 0x5A]))
PYEOF
run_mtrain "$WORK/verify_bad" checkpoint verify "$ck"
expect_rc 1 "verify a corrupted checkpoint"
expect_in "$WORK/verify_bad" "shard_rank1.pt: checksum mismatch: expected crc32c:"
size=$(stat -c %s "$WORK/step_3_copy/shard_rank0.pt")
truncate -s $((size / 2)) "$WORK/step_3_copy/shard_rank0.pt"
run_mtrain "$WORK/verify_trunc" checkpoint verify "$WORK/step_3_copy"
expect_rc 1 "verify a truncated checkpoint"
expect_in "$WORK/verify_trunc" "expected $size bytes, found $((size / 2))"

run_mtrain "$WORK/resume" launch --nproc-per-node 2 --strategy ddp --max-steps 8 --master-port auto \
  "${small[@]}" --work-dir "$WORK/wd" --resume auto
expect_rc 0 "resume auto past the damaged newest checkpoint"
expect_in "$WORK/resume" "warning: skipping checkpoint $ck"
expect_in "$WORK/resume" "Resumed from $WORK/wd/checkpoints/step_3 at step 3"
finish
