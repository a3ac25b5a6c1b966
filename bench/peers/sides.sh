# The two sides of bench/peers (sourced by run.sh and profile.sh, never run): the gpt and its
# token rows built once in $work, and one run of each side with the same model, data, per-rank
# batch, AdamW and threads. WRAP (an array, empty by default) prefixes each side's command line
# (profile.sh puts `perf record` there). ATTENTION is gpt.py's (matmul; bench/compiled: sdpa).
#   needs: here, build; env: STEPS WARMUP BATCH THREADS L H E T V ATTENTION PY (defaults below)
STEPS=${STEPS:-20} WARMUP=${WARMUP:-3} BATCH=${BATCH:-8}
THREADS=${THREADS:-1} L=${L:-4} H=${H:-4} E=${E:-256} T=${T:-64} V=${V:-4096} ATTENTION=${ATTENTION:-matmul}
[ -n "${WRAP+x}" ] || WRAP=()
PY=${PY:-$("$here/scripts/python-env")}
mtrain=$build/bin/mtrain
[ -x "$mtrain" ] || { echo "bench/peers: $mtrain not found; build with scripts/bootstrap --torch python" >&2; exit 2; }
"$build/bin/mtrain-worker" build-info | grep -q '"libtorch":"2\.' ||
  { echo "bench/peers: $build's worker does not link a PyTorch 2.x (scripts/bootstrap --torch python)" >&2; exit 2; }
export PATH="$(dirname "$PY"):$PATH" OMP_NUM_THREADS=$THREADS
export TORCH_EXTENSIONS_DIR=$(dirname "$(dirname "$PY")")/torch_extensions  # scripts/python-env built DeepSpeed's op there
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$PY" "$here/bench/torchscript/gpt.py" "$work/gpt.pt" "$L" "$H" "$E" "$T" "$V" "$ATTENTION"
"$PY" - "$work/data.pt" "$V" "$T" <<'PY'
import sys, torch
g = torch.Generator().manual_seed(0)
seq = torch.randint(0, int(sys.argv[2]), (4096, int(sys.argv[3]) + 1), generator=g)
torch.save({"input": seq[:, :-1].contiguous(), "target": seq[:, 1:].contiguous()}, sys.argv[1])
PY

figures() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["step_time_median_s"], d["peak_memory_bytes"])' "$1"; }

run_mtrain() {  # STRATEGY WORLD ROUND PEER [PACKAGE] -> "seconds bytes"
  # One folder per pair (zero3 is run against two peers) and model: the TorchScript file, or
  # the compiled PACKAGE of the same gpt (bench/compiled), whose units are its blocks.
  local wd="$work/m-$1-$2-$3-$4${5:+-compiled}" model=(--model torchscript --model-path "$work/gpt.pt" --set model.loss=lm_cross_entropy) extra=()
  [ -n "${5:-}" ] && model=(--model compiled --model-path "$5" --set model.trust_code=true)
  [ "$1" = fsdp ] && [ -z "${5:-}" ] && extra=(--set fsdp.wrap_module_types=Block)
  "${WRAP[@]}" "$mtrain" launch --nproc-per-node "$2" --master-port 0 --strategy "$1" --max-steps "$STEPS" --batch-size "$BATCH" \
    "${model[@]}" \
    --data tensors --data-path "$work/data.pt" --set data.shuffle=false --set data.val_fraction=0 \
    --set optim.name=adamw --set optim.lr=3e-4 --set optim.beta2=0.95 --set optim.weight_decay=0 \
    --set sched.name=constant --set train.threads="$THREADS" --set train.timing_warmup_steps="$WARMUP" \
    --set train.log_interval=1000 --work-dir "$wd" "${extra[@]}" >"$wd.log" 2>&1 ||
    { echo "bench/peers: mtrain $1 world $2 failed:" >&2; tail -20 "$wd.log" >&2; exit 1; }
  figures "$(find "$wd" -name summary.json | head -1)"
}

run_pytorch() {  # MODE WORLD ROUND -> "seconds bytes"
  local out="$work/p-$1-$2-$3"
  timeout 900 "${WRAP[@]}" torchrun --nproc_per_node "$2" --master_port "$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')" \
    "$here/bench/peers/pytorch_train.py" "$1" "$work/gpt.pt" "$work/data.pt" "$out.json" \
    "$STEPS" "$WARMUP" "$BATCH" "$THREADS" "$L" "$H" "$E" "$T" "$V" "$ATTENTION" >"$out.log" 2>&1 ||
    { echo "bench/peers: PyTorch $1 world $2 failed:" >&2; grep -v Warning "$out.log" | tail -20 >&2; exit 1; }
  figures "$out.json"
}

