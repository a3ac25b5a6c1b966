#!/usr/bin/env bash
# The scripted copy of the built-in gpt (bench/torchscript/gpt.py: same shape, same parameter
# names) against the built-in gpt, world 2, under zero3 and ddp: median step time of each
# (summary.json step_time_median_s), ROUNDS rounds alternating which runs first, and the ratio
# TorchScript / built-in (target <= 1.10). Prints every command it runs.
# Usage: bench/torchscript/run.sh [BUILD_DIR] [ROUNDS] [STEPS]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$here/build}/bin
rounds=${2:-3}
steps=${3:-30}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
L=4 H=4 E=128 T=64 V=256
/usr/bin/python3 "$here/bench/torchscript/gpt.py" "$work/gpt.pt" $L $H $E $T $V
# The same token windows for both (a tensors file: random tokens, shifted by one for targets).
/usr/bin/python3 -c "
import sys, torch
g = torch.Generator().manual_seed(0)
seq = torch.randint(0, $V, (4096, $T + 1), generator=g)
torch.save({'input': seq[:, :-1].contiguous(), 'target': seq[:, 1:].contiguous()}, sys.argv[1])" "$work/data.pt"
common=(launch --nproc-per-node 2 --master-port 0 --max-steps "$steps" --batch-size 8
  --set model.n_layer=$L --set model.n_head=$H --set model.n_embd=$E --set model.block_size=$T
  --set model.vocab_size=$V --set train.log_interval=1000 --data tensors --data-path "$work/data.pt"
  --set data.val_fraction=0)
declare -A times
run() {  # run KIND STRATEGY ROUND
  local wd="$work/$1-$2-$3" args
  if [ "$1" = torchscript ]; then
    args=(--model torchscript --model-path "$work/gpt.pt" --set model.loss=lm_cross_entropy)
    [ "$2" = fsdp ] && args+=(--set fsdp.wrap_module_types=Block)
  else
    args=(--model gpt)
  fi
  echo "+ mtrain ${common[*]} --strategy $2 ${args[*]} --work-dir $wd" >&2
  "$bin/mtrain" "${common[@]}" --strategy "$2" "${args[@]}" --work-dir "$wd" >/dev/null
  times[$1-$2]+="$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step_time_median_s'])" "$wd/summary.json") "
}
for strategy in zero3 ddp; do
  for r in $(seq "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then run gpt "$strategy" "$r"; run torchscript "$strategy" "$r";
    else run torchscript "$strategy" "$r"; run gpt "$strategy" "$r"; fi
  done
  /usr/bin/python3 - "$strategy" "${times[gpt-$strategy]}" "${times[torchscript-$strategy]}" <<'PY'
import statistics, sys
s, g, t = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
mg, mt = statistics.median(g), statistics.median(t)
print(f"{s:6} built-in gpt {mg*1e3:8.2f} ms/step   torchscript {mt*1e3:8.2f} ms/step   ratio {mt/mg:.3f}"
      f"   (rounds: gpt {[round(x*1e3,1) for x in g]}, torchscript {[round(x*1e3,1) for x in t]})")
PY
done
