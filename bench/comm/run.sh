#!/usr/bin/env bash
# `mtrain bench comm` all-reduce busbw beside a plain c10d Gloo all-reduce loop in Python, both
# started by mtrain (same ranks, sizes and iteration counts), ROUNDS rounds whose order alternates
# (mtrain first in odd rounds, c10d first in even ones: on a loaded machine the first of a pair is
# measurably disadvantaged), so noise and order hit both alike; prints every round and the medians.
# Usage: bench/comm/run.sh [BUILD_DIR] [NPROC] [ROUNDS] [MIN_BYTES] [MAX_BYTES] [ITERS]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$here/build}/bin
nproc=${2:-2}
rounds=${3:-5}
min=${4:-1M}
max=${5:-64M}
iters=${6:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
files=()
sizes=$(/usr/bin/python3 - "$min" "$max" <<'PY'
import sys
def b(t):
    t = t.upper().removesuffix("IB").removesuffix("B")
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    return int(t.rstrip("KMG")) * m
lo, hi = b(sys.argv[1]), b(sys.argv[2])
s = []
while lo <= hi:
    s.append(lo)
    lo *= 2
print(",".join(map(str, s)))
PY
)
run_mtrain() {
  "$bin/mtrain" bench comm --nproc "$nproc" --ops all_reduce --min-bytes "$min" --max-bytes "$max" --iters "$iters" \
    --warmup 5 --format json --output "$work/mtrain.$1.json" 2>/dev/null
}
run_c10d() {
  "$bin/mtrain" launch --nproc-per-node "$nproc" --master-port auto -- /usr/bin/python3 "$here/bench/comm/c10d_allreduce.py" \
    --sizes "$sizes" --iters "$iters" --warmup 5 >"$work/c10d.$1.txt"
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then run_mtrain "$r"; run_c10d "$r"; else run_c10d "$r"; run_mtrain "$r"; fi
  files+=("$work/mtrain.$r.json" "$work/c10d.$r.txt")
done
echo "world $nproc, all_reduce float32, $iters timed calls after 5 warm-up, $rounds alternating rounds"
/usr/bin/python3 "$here/bench/comm/compare.py" "${files[@]}"
