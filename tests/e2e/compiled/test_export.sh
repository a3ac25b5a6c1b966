#!/usr/bin/env bash
# The exporter (issue 47, python/mtrain_export): a 2-block nanoGPT-style model with SDPA is
# exported and AOTInductor-compiled into one package (the two equal blocks share one pair of
# programs); its programs, composed as the worker composes them (compiled_reference.py), train
# 5 SGD steps equal to eager PyTorch (loss, every gradient and every weight within 1e-5;
# measured 2.4e-7 loss, 3e-8 weights). Exported on one thread, its kernels still run on as many
# as the worker's train.threads (Inductor's dynamic threads). A second export of the same model
# compiles nothing (the cache); a model whose units are not found, or one with dropout (a
# recomputed backward would draw another mask), is refused with exit 2. About 2 minutes on two busy cores, most of it AOTInductor compiling 6 programs.
. "$(dirname "$0")/../lib.sh"
need_worker_torch
"$TORCH_PY" -c 'import torch; assert int(torch.__version__.split(".")[0]) >= 2' 2>/dev/null ||
  skip "$TORCH_PY has PyTorch 1.x: the compiled format is the 2.x line's"
REF="$(dirname "$0")/compiled_reference.py"
export PYTHONPATH=${MTRAIN_SOURCE_DIR:?}/python MTRAIN_EXPORT_CACHE=$WORK/cache
"$TORCH_PY" "$REF" model "$WORK"
export_it() {
  "$TORCH_PY" -W ignore -m mtrain_export "$WORK/model.py:make" --example input=int64:6x8 \
    --example target=int64:6x8 --wrap-module-types "$1" -o "$2" >"$WORK/out" 2>&1
}
SECONDS=0
# On one thread, as a launcher's OMP_NUM_THREADS=1 leaves it: the kernels must still follow the
# worker's train.threads rather than the exporter's.
OMP_NUM_THREADS=1 export_it Block "$WORK/pkg"; rc=$?
expect_rc 0 "export of a 2-block model (${SECONDS} s)"
expect_in "$WORK/out" "8 programs (2 from the cache, 6 files), 2 units, 27 tensors"
if msg=$("$TORCH_PY" - "$WORK/pkg/programs/unit0_Block_backward.pt2" <<'PY'
import re, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
src = "".join(z.read(n).decode() for n in z.namelist() if n.endswith(".cpp"))
pinned, parallel = re.findall(r"omp parallel num_threads\([0-9]+\)", src), src.count("#pragma omp parallel")
print(f"{parallel} parallel regions, {len(pinned)} with a fixed thread count")
sys.exit(0 if parallel and not pinned else 1)
PY
); then ok "kernels take the caller's thread count: $msg"; else fail "kernels fixed to the exporter's threads: $msg"; fi
for f in manifest.json model.safetensors programs/prologue_forward.pt2 programs/unit0_Block_backward.pt2 \
    programs/epilogue_step.pt2; do
  [ -s "$WORK/pkg/$f" ] && ok "package has $f" || fail "package lacks $f"
done
if msg=$("$TORCH_PY" -W ignore "$REF" steps "$WORK/pkg" "$WORK/model.py" 5 1e-5 2>&1); then
  ok "compiled programs against eager PyTorch: ${msg##*$'\n'}"
else
  fail "compiled programs against eager PyTorch: $msg"
fi
SECONDS=0
export_it Block "$WORK/pkg2"; rc=$?
expect_rc 0 "second export of the same model (${SECONDS} s)"
expect_in "$WORK/out" "8 programs (8 from the cache, 6 files)"
cmp -s "$WORK/pkg/programs/epilogue_step.pt2" "$WORK/pkg2/programs/epilogue_step.pt2" &&
  ok "the cached program is the compiled one" || fail "the cached program differs"
export_it Blokc "$WORK/pkg3"; rc=$?
expect_rc 2 "unknown unit type refused"
expect_in "$WORK/out" "no module of the model is of a type in --wrap-module-types (Blokc)"
"$TORCH_PY" -W ignore -m mtrain_export "$WORK/model.py:make_dropout" --example input=int64:6x8 \
  --example target=int64:6x8 --wrap-module-types Block --out "$WORK/pkg4" >"$WORK/out" 2>&1; rc=$?
expect_rc 2 "a model with dropout refused"
expect_in "$WORK/out" "draws random numbers in training mode"
# The compiled programs for test_train_compiled.sh (the same model and examples), replaced whole so
# that it never sees half a copy.
if [ "$fails" -eq 0 ] && [ -n "${MTRAIN_E2E_EXPORT_CACHE:-}" ]; then
  rm -rf "$MTRAIN_E2E_EXPORT_CACHE.new" && cp -r "$WORK/cache" "$MTRAIN_E2E_EXPORT_CACHE.new" &&
    rm -rf "$MTRAIN_E2E_EXPORT_CACHE" && mv "$MTRAIN_E2E_EXPORT_CACHE.new" "$MTRAIN_E2E_EXPORT_CACHE"
fi
finish
