#!/usr/bin/env bash
# model.name compiled (issue 47 step 2): the 2-block SDPA TinyGPT of test_export.sh, exported once,
# trained by mtrain-worker from its AOTInductor programs — prologue, one autograd node per unit
# (forward program with its activations; backward program on them), epilogue — under ddp x1,
# zero3 x2 and fsdp x2 (units = the package's blocks, gathered on the explicit use call), 4 steps
# of SGD (lr 0.1) and of AdamW (lr 1e-3), against eager PyTorch training of the same model from the
# same weights on the same rows: model.pt within 1e-5 (SGD) and 1e-4 (AdamW), measured 1.2e-7 for
# both; and 2 SGD steps under fsdp x2 checkpointed, resumed under zero3 x2 (1.2e-7). The package
# is compiled for 6 rows, so every rank trains 6: world 1 is compared with global batches of 6,
# world 2 with 12. Refused with exit 2 before any rank starts: no model.trust_code, a missing
# program, a package of another PyTorch, model.init whose table differs, a batch of other rows
# than the programs were compiled for (the rank's own argument check is
# tests/unit/trainer/model/test_loaded_program.cpp). 200 s on two busy cores (load 10) after
# test_export.sh, which leaves its compiled programs in MTRAIN_E2E_EXPORT_CACHE (the export then
# takes 17 s, 8 programs from the cache; alone, AOTInductor compiles 6 programs: 190 s more); most
# of the rest is the 8 trainings with their eager references (150 s).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../trainer/port_retry.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_worker_torch
"$TORCH_PY" -c 'import torch; assert int(torch.__version__.split(".")[0]) >= 2' 2>/dev/null ||
  skip "$TORCH_PY has PyTorch 1.x: the compiled format is the 2.x line's"
REF="$(dirname "$0")/compiled_reference.py"
GOLDEN="$(dirname "$0")/../trainer/torchscript_golden.py"
export PYTHONPATH=${MTRAIN_SOURCE_DIR:?}/python MTRAIN_EXPORT_CACHE=$WORK/cache
# The same model and examples as test_export.sh, which runs first and leaves its compiled programs
# there (the cache's keys are the exported graph, shapes, PyTorch and device: a stale entry is
# never a hit). Without them this test compiles the 6 programs itself.
mkdir -p "$WORK/cache"
[ -d "${MTRAIN_E2E_EXPORT_CACHE:-}" ] && cp -r "$MTRAIN_E2E_EXPORT_CACHE/." "$WORK/cache/"
STEPS=4
"$TORCH_PY" "$REF" model "$WORK" && "$TORCH_PY" "$REF" data "$WORK" $((STEPS * 12)) || { fail "the model and data"; finish; }
SECONDS=0
# Through `mtrain export` (the bundled exporter run by the given Python; test_export.sh runs
# `python -m mtrain_export` itself).
PYTHONWARNINGS=ignore "$MTRAIN" export --python "$TORCH_PY" "$WORK/model.py:make" --example input=int64:6x8 \
  --example target=int64:6x8 --wrap-module-types Block -o "$WORK/pkg" >"$WORK/out" 2>&1; rc=$?
expect_rc 0 "mtrain export of the 2-block model (${SECONDS} s, $(grep -o '[0-9]* programs ([0-9]* from the cache' "$WORK/out")))"
[ "$rc" -eq 0 ] || { sed 's/^/    | /' "$WORK/out" | tail -20; finish; }

common=(--master-port 0 --model compiled --set model.trust_code=true --data tensors
  --data-path "$WORK/data.pt" --set data.shuffle=false --set data.val_fraction=0 --set sched.name=constant
  --set optim.weight_decay=0 --set train.threads=1 --set train.log_interval=2)
SECONDS=0
for opt in sgd adamw; do
  if [ "$opt" = sgd ]; then lr=0.1; tol=1e-5; else lr=1e-3; tol=1e-4; fi
  for global in 6 12; do
    "$TORCH_PY" -W ignore "$REF" train "$WORK/pkg" "$WORK/model.py" "$WORK/data.pt" $global $STEPS $opt $lr \
      "$WORK/ref_${opt}_$global.pt" || fail "the eager reference ($opt, global batch $global)"
  done
  for run in "ddp 1" "zero3 2" "fsdp 2"; do
    set -- $run
    wd="$WORK/wd-$opt-$1-$2"
    # Units really released and gathered on use: no persistent ZeRO-3 unit.
    retry_port_clash "$WORK/out" launch --nproc-per-node "$2" --strategy "$1" --work-dir "$wd" "${common[@]}" \
      --model-path "$WORK/pkg" --batch-size 6 --max-steps $STEPS \
      --set optim.name=$opt --set optim.lr=$lr --set zero.stage3_param_persistence_threshold=0
    if [ "$rc" -ne 0 ]; then
      fail "$opt $1 x$2: exit $rc"; sed 's/^/    | /' "$WORK/out" | tail -20; continue
    fi
    if msg=$("$TORCH_PY" -W ignore "$GOLDEN" compare "$WORK/ref_${opt}_$((6 * $2)).pt" "$wd/model.pt" "$tol" 2>&1); then
      ok "$opt $1 x$2 model.pt against eager PyTorch: $msg"
    else
      fail "$opt $1 x$2 model.pt against eager PyTorch: $msg"
    fi
  done
done
# Checkpoint and resume across strategies: 2 SGD steps under fsdp x2, then zero3 x2 resumes to step
# 4 from that checkpoint; the result is still PyTorch's.
wd="$WORK/wd-resumed"
retry_port_clash "$WORK/out" launch --nproc-per-node 2 --strategy fsdp --work-dir "$wd" "${common[@]}" \
  --model-path "$WORK/pkg" --batch-size 6 --set optim.name=sgd --set optim.lr=0.1 --max-steps 2
expect_rc 0 "sgd fsdp x2, steps 1-2"
retry_port_clash "$WORK/out" launch --nproc-per-node 2 --strategy zero3 --work-dir "$wd" "${common[@]}" \
  --model-path "$WORK/pkg" --batch-size 6 --set optim.name=sgd --set optim.lr=0.1 --max-steps $STEPS --resume auto
expect_rc 0 "sgd zero3 x2 resumed, steps 3-4"
if msg=$("$TORCH_PY" -W ignore "$GOLDEN" compare "$WORK/ref_sgd_12.pt" "$wd/model.pt" 1e-5 2>&1); then
  ok "sgd resumed across strategies: $msg"
else
  fail "sgd resumed across strategies: $msg"
fi
# Consolidation of the sharded (zero3 x2) checkpoint of step 4: one state dict, equal to PyTorch's.
ck=$(ls -d "$WORK/wd-resumed/checkpoints/step_"* 2>/dev/null | sort -V | tail -1)
run_mtrain "$WORK/cons.out" checkpoint consolidate "$ck" -o "$WORK/consolidated.pt"
expect_rc 0 "checkpoint consolidate ${ck##*/}"
if msg=$("$TORCH_PY" -W ignore "$GOLDEN" compare "$WORK/ref_sgd_12.pt" "$WORK/consolidated.pt" 1e-5 2>&1); then
  ok "the consolidated ${ck##*/} against eager PyTorch: $msg"
else
  fail "the consolidated ${ck##*/} against eager PyTorch: $msg"
fi
# And across world sizes: the same 2 steps under fsdp x2, then ddp x1 resumes with 2 micro-batches
# per step (the same global batch of 12 rows) to step 4.
wd="$WORK/wd-resumed-world"
retry_port_clash "$WORK/out" launch --nproc-per-node 2 --strategy fsdp --work-dir "$wd" "${common[@]}" \
  --model-path "$WORK/pkg" --batch-size 6 --set optim.name=sgd --set optim.lr=0.1 --max-steps 2
expect_rc 0 "sgd fsdp x2, steps 1-2"
retry_port_clash "$WORK/out" launch --nproc-per-node 1 --strategy ddp --work-dir "$wd" "${common[@]}" \
  --model-path "$WORK/pkg" --batch-size 6 --grad-accum 2 --set optim.name=sgd --set optim.lr=0.1 \
  --max-steps $STEPS --resume auto
expect_rc 0 "sgd ddp x1 (2 micro-batches) resumed, steps 3-4"
if msg=$("$TORCH_PY" -W ignore "$GOLDEN" compare "$WORK/ref_sgd_12.pt" "$wd/model.pt" 1e-5 2>&1); then
  ok "sgd resumed from world 2 at world 1: $msg"
else
  fail "sgd resumed from world 2 at world 1: $msg"
fi
ok "10 trainings in ${SECONDS} s"

# Refusals.
# An interpreter without PyTorch 2.x (Debian's python3-torch is 1.13), or none at all: one paragraph, exit 2.
for py in /usr/bin/python3 "$WORK/no-such-python"; do
  "$MTRAIN" export --python "$py" "$WORK/model.py:make" --example input=int64:6x8 --example target=int64:6x8 \
    --wrap-module-types Block -o "$WORK/pkg-refused" >"$WORK/refused.out" 2>&1; rc=$?
  expect_rc 2 "mtrain export --python $py"
  expect_in "$WORK/refused.out" "--python PATH"
  [ ! -e "$WORK/pkg-refused" ] && ok "no package written with $py" || fail "a package was written with $py"
done
wd=(--work-dir "$WORK/wd-refused" --nproc-per-node 1 --batch-size 6)
refused "model.trust_code is false" --model compiled --model-path "$WORK/pkg" --data tensors --data-path "$WORK/data.pt" "${wd[@]}"
cp -r "$WORK/pkg" "$WORK/pkg-missing" && rm "$WORK/pkg-missing/programs/epilogue_step.pt2"
refused "the program is missing" "${common[@]}" --model-path "$WORK/pkg-missing" "${wd[@]}"
cp -r "$WORK/pkg" "$WORK/pkg-other" &&
  "$TORCH_PY" -c 'import json,sys; p=sys.argv[1]; m=json.load(open(p)); m["torch"]="2.3.1"; json.dump(m, open(p, "w"))' \
    "$WORK/pkg-other/manifest.json"
refused "was compiled by PyTorch 2.3.1" "${common[@]}" --model-path "$WORK/pkg-other" "${wd[@]}"
"$TORCH_PY" -c 'import sys, torch; from safetensors.torch import load_file, save_file
w = load_file(sys.argv[1]); w["wte.weight"] = torch.zeros(33, 16); save_file(w, sys.argv[2])' \
  "$WORK/pkg/model.safetensors" "$WORK/init.safetensors"
refused "does not match the model: 0 missing from the file, 0 unexpected, 1 with the wrong shape" "${common[@]}" \
  --model-path "$WORK/pkg" --init "$WORK/init.safetensors" "${wd[@]}"
refused "train.batch_size: 3 rows per rank, but the compiled package" "${common[@]}" --model-path "$WORK/pkg" \
  --work-dir "$WORK/wd-refused" --nproc-per-node 1 --batch-size 3
# Mixed precision would hand the fp32 programs bf16 parameters: said before any rank starts (a rank
# refused it at its first step, under a doubled "model.path: model.path:" prefix).
refused "train.precision: train.precision is bf16, but the compiled package" "${common[@]}" \
  --model-path "$WORK/pkg" "${wd[@]}" --precision bf16
expect_not_in "$WORK/refused.out" "rank 0"
finish
