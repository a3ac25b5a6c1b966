#!/usr/bin/env bash
# `mtrain bench comm` all-reduce busbw beside a plain c10d Gloo all-reduce loop in Python, both
# started by mtrain (same ranks, same sizes, same iteration counts), alternating ROUNDS times so
# machine noise hits both alike. Usage: bench/comm/run.sh [BUILD_DIR] [NPROC] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$here/build}/bin
nproc=${2:-2}
rounds=${3:-3}
sizes=1048576,4194304,16777216,67108864
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for r in $(seq "$rounds"); do
  "$bin/mtrain" bench comm --nproc "$nproc" --ops all_reduce --min-bytes 1M --max-bytes 64M --iters 20 --warmup 5 \
    --format json --output "$work/mtrain.$r.json" 2>/dev/null
  "$bin/mtrain" launch --nproc-per-node "$nproc" --master-port auto -- /usr/bin/python3 "$here/bench/comm/c10d_allreduce.py" \
    --sizes "$sizes" --iters 20 --warmup 5 >"$work/c10d.$r.txt"
  echo "== round $r (world $nproc)"
  /usr/bin/python3 "$here/bench/comm/compare.py" "$work/mtrain.$r.json" "$work/c10d.$r.txt"
done
