#!/usr/bin/env bash
# Pretrained weights in, safetensors out, through the real binaries:
#  * gpt trained under zero3 at world 2 writes model.safetensors; the test's own reader (struct +
#    json + numpy, from the spec) reads it back equal to model.pt (torch.load), metadata included;
#  * a new run under fsdp at world 3 with model.init = that file and 0 steps: its weights equal the
#    file bit for bit;
#  * a safetensors file from the test's own writer (F32 and F16 tensors) loads (ddp, world 1);
#  * Python's torch.save(model.state_dict()) — an OrderedDict with _metadata, a non-contiguous
#    tensor — and a plain dict under {"state_dict": ..., "epoch": 3} load (zero2, world 2);
#  * `mtrain checkpoint consolidate -o x.safetensors` equals the .pt consolidation;
#  * bad inputs: a missing file → exit 2 before any rank starts (no work dir); a damaged file and a
#    mismatching model → one paragraph (the table) and nothing in the work dir.
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_torch
"$PY" -c 'import numpy' 2>/dev/null || skip "/usr/bin/python3 has no numpy"
small=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=2 --set model.block_size=16
       --set train.batch_size=4 --set train.log_interval=2)
launch() { run_mtrain "$1" launch --master-port 0 "${small[@]}" "${@:2}"; }

cat >"$WORK/st.py" <<'PYEOF'
# A safetensors reader and writer from the format's description: u64 little-endian header
# length, JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, raw data.
import json, struct, numpy as np
DT = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32,
      "U8": np.uint8, "I8": np.int8, "BOOL": np.bool_}
def read(path):
    b = open(path, "rb").read()
    (n,) = struct.unpack("<Q", b[:8])
    h = json.loads(b[8:8 + n])
    meta = h.pop("__metadata__", {})
    out = {}
    for k, v in h.items():
        s, e = v["data_offsets"]
        raw = b[8 + n + s:8 + n + e]
        if v["dtype"] == "BF16":  # numpy has no bfloat16: widen to float32 by hand
            a = np.frombuffer(raw, np.uint16).astype(np.uint32) << 16
            out[k] = a.view(np.float32).reshape(v["shape"])
        else:
            out[k] = np.frombuffer(raw, DT[v["dtype"]]).reshape(v["shape"])
    return meta, out
def write(path, tensors, meta=None):
    h, off, blobs = {}, 0, []
    if meta: h["__metadata__"] = meta
    inv = {np.dtype(v): k for k, v in DT.items()}
    for k, a in tensors.items():
        a = np.ascontiguousarray(a)
        blob = a.tobytes()
        h[k] = {"dtype": inv[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(blob)]}
        off += len(blob)
        blobs.append(blob)
    hb = json.dumps(h).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + b"".join(blobs))
PYEOF

# 1. Train under zero3 at world 2: model.safetensors beside model.pt.
launch "$WORK/train" --nproc-per-node 2 --strategy zero3 --max-steps 4 --set checkpoint.interval=4 \
  --set zero.stage3_param_persistence_threshold=0 --work-dir "$WORK/src"
expect_rc 0 "zero3 world 2 trains and exports"
[ -f "$WORK/src/model.safetensors" ] && ok "model.safetensors written" || fail "no model.safetensors"
"$PY" - "$WORK/st.py" "$WORK/src" <<'PYEOF' && ok "model.safetensors read by the test's reader equals model.pt" || fail "model.safetensors differs from model.pt"
import sys, json, numpy as np, torch
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); import st
meta, t = st.read(sys.argv[2] + "/model.safetensors")
pt = torch.load(sys.argv[2] + "/model.pt")
assert meta["format"] == "pt" and meta["step"] == "4", meta
assert json.loads(meta["job"])["strategy"] == "zero3"
assert list(t) == list(pt), (list(t), list(pt))  # same names, same order
for k, v in pt.items():
    assert t[k].dtype == np.float32 and np.array_equal(t[k], v.numpy()), k
PYEOF

# 2. Another strategy and world size starts from it: step-0 weights equal the file bit for bit.
launch "$WORK/init1" --nproc-per-node 3 --strategy fsdp --max-steps 0 \
  --set model.init="$WORK/src/model.safetensors" --work-dir "$WORK/dst1"
expect_rc 0 "fsdp world 3 starts from model.init"
expect_in "$WORK/init1" "Initialised"
"$PY" - "$WORK/st.py" "$WORK/src/model.safetensors" "$WORK/dst1/model.safetensors" <<'PYEOF' && ok "fsdp world 3 step-0 weights equal the file bit for bit" || fail "init weights differ"
import sys, numpy as np
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); import st
_, a = st.read(sys.argv[2]); _, b = st.read(sys.argv[3])
assert list(a) == list(b)
for k in a: assert a[k].tobytes() == b[k].tobytes(), k
PYEOF

# 3. A file from the test's own writer (some tensors F16) loads under ddp at world 1.
"$PY" - "$WORK/st.py" "$WORK/src/model.safetensors" "$WORK/own.safetensors" <<'PYEOF' || fail "python writer"
import sys, numpy as np
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); import st
_, t = st.read(sys.argv[2])
rng = np.random.default_rng(0)
out = {}
for i, (k, v) in enumerate(t.items()):
    x = rng.standard_normal(v.shape).astype(np.float32)
    out[k] = x.astype(np.float16) if i % 2 else x
st.write(sys.argv[3], out, {"who": "test"})
PYEOF
launch "$WORK/init2" --nproc-per-node 1 --strategy ddp --max-steps 0 \
  --set model.init="$WORK/own.safetensors" --work-dir "$WORK/dst2"
expect_rc 0 "ddp world 1 starts from a Python-written safetensors file"
"$PY" - "$WORK/st.py" "$WORK/own.safetensors" "$WORK/dst2/model.pt" <<'PYEOF' && ok "weights equal the Python-written file (F16 widened exactly)" || fail "python-written file not loaded"
import sys, numpy as np, torch
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); import st
_, t = st.read(sys.argv[2]); pt = torch.load(sys.argv[3])
for k, v in t.items(): assert np.array_equal(pt[k].numpy(), v.astype(np.float32)), k
PYEOF

# 4. torch.save'd state dicts: the OrderedDict state_dict() returns, and a wrapped plain dict.
"$PY" - "$WORK/src/model.pt" "$WORK" <<'PYEOF' || fail "torch.save state dicts"
import sys, collections, torch
src = torch.load(sys.argv[1])
g = torch.Generator().manual_seed(1)
sd = collections.OrderedDict()
sd._metadata = collections.OrderedDict({"": {"version": 1}})
for k, v in src.items():
    x = torch.randn(v.shape, generator=g)
    # a saved view: transposed storage (non-contiguous) for 2-D tensors
    sd[k] = x.t().contiguous().t() if x.dim() == 2 else x
assert any(not v.is_contiguous() for v in sd.values())
torch.save(sd, sys.argv[2] + "/ordered.pt")
torch.save({"state_dict": {k: v.double() for k, v in sd.items()}, "epoch": 3}, sys.argv[2] + "/wrapped.pt")
PYEOF
for f in ordered wrapped; do
  launch "$WORK/init_$f" --nproc-per-node 2 --strategy zero2 --max-steps 0 \
    --set model.init="$WORK/$f.pt" --work-dir "$WORK/dst_$f"
  expect_rc 0 "zero2 world 2 starts from torch.save'd $f.pt"
done
expect_in "$WORK/init_wrapped" "'state_dict' entry"
"$PY" - "$WORK" <<'PYEOF' && ok "torch.save'd OrderedDict and wrapped dict load exactly" || fail "torch.save'd state dicts not loaded exactly"
import sys, torch
w = sys.argv[1]
sd = torch.load(w + "/ordered.pt")
for f in ("ordered", "wrapped"):
    got = torch.load(w + "/dst_" + f + "/model.pt")
    for k, v in sd.items(): assert torch.equal(got[k], v.float()), (f, k)
PYEOF

# 5. consolidate to safetensors equals consolidate to .pt.
ck="$WORK/src/checkpoints/step_4"
run_mtrain "$WORK/cons" checkpoint consolidate "$ck" -o "$WORK/cons.safetensors"
expect_rc 0 "consolidate -o x.safetensors"
expect_in "$WORK/cons" "safetensors"
run_mtrain "$WORK/cons2" checkpoint consolidate "$ck" -o "$WORK/cons.pt" --format pt
expect_rc 0 "consolidate --format pt"
"$PY" - "$WORK/st.py" "$WORK/cons.safetensors" "$WORK/cons.pt" <<'PYEOF' && ok "consolidated safetensors equals the consolidated state dict" || fail "consolidated safetensors differs"
import sys, numpy as np, torch
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); import st
meta, t = st.read(sys.argv[2]); pt = torch.load(sys.argv[3])
assert meta["step"] == "4" and list(t) == list(pt)
for k, v in pt.items(): assert np.array_equal(t[k], v.numpy()), k
PYEOF

# 6. Bad input.
launch "$WORK/missing" --nproc-per-node 2 --max-steps 1 --set model.init="$WORK/nope.safetensors" \
  --work-dir "$WORK/dst_missing"
expect_rc 2 "a missing model.init file is refused before any rank starts"
expect_in "$WORK/missing" "nope.safetensors' does not exist"
[ ! -e "$WORK/dst_missing" ] && ok "nothing written for a missing file" || fail "work dir created"
head -c 100 "$WORK/src/model.safetensors" >"$WORK/cut.safetensors"
launch "$WORK/cut" --nproc-per-node 2 --max-steps 1 --set model.init="$WORK/cut.safetensors" \
  --work-dir "$WORK/dst_cut"
[ "$rc" -ne 0 ] && ok "a truncated safetensors file fails (exit $rc)" || fail "truncated file accepted"
expect_in "$WORK/cut" "cut.safetensors: not a valid safetensors file"
[ ! -e "$WORK/dst_cut" ] && ok "nothing written for a damaged file" || fail "work dir created: $(ls -A "$WORK/dst_cut")"
launch "$WORK/mismatch" --nproc-per-node 2 --max-steps 1 --set model.n_layer=3 \
  --set model.init="$WORK/src/model.safetensors" --work-dir "$WORK/dst_mm"
[ "$rc" -ne 0 ] && ok "a mismatching model fails (exit $rc)" || fail "mismatching file accepted"
expect_in "$WORK/mismatch" "does not match the model"
expect_in "$WORK/mismatch" "missing      blocks.2.attn.c_attn.weight"
expect_in "$WORK/mismatch" "model.init_strict: false"
[ ! -e "$WORK/dst_mm" ] && ok "nothing written for a mismatching model" || fail "work dir created: $(ls -A "$WORK/dst_mm")"
finish
