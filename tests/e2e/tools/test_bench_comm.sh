#!/usr/bin/env bash
# `mtrain bench comm` at world 2, 3 and 4: every collective's result checked against the values
# each rank can predict, the busbw column equal to algbw times the nccl-tests factor, and the
# text / --output / --plot paths.
. "$(dirname "$0")/../lib.sh"
[ -x "$(dirname "$MTRAIN")/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build needed)"

for n in 2 3 4; do
  run_mtrain "$WORK/comm$n.out" bench comm --nproc "$n" --min-bytes 1K --max-bytes 64K --iters 2 --warmup 1 \
    --format json --output "$WORK/comm$n.json"
  expect_rc 0 "bench comm at world $n"
  if "$PY" - "$WORK/comm$n.json" "$n" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert r["bench"] == "comm" and r["world"] == n and r["wrong"] == 0, r
ops = {row["op"] for row in r["rows"]}
assert ops == {"all_reduce", "all_gather", "reduce_scatter", "broadcast"}, ops
factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n, "broadcast": 1.0}
for row in r["rows"]:
    assert row["correct"] and row["max_error"] == 0, row
    assert abs(row["algbw_gbps"] - row["bytes"] / row["time_s"] / 1e9) < 1e-9 * max(1, row["algbw_gbps"]), row
    assert abs(row["busbw_gbps"] - row["algbw_gbps"] * factor[row["op"]]) < 1e-9 * max(1, row["busbw_gbps"]), row
    if row["op"] in ("all_gather", "reduce_scatter"):
        assert row["count"] % n == 0, row
assert len([x for x in r["rows"] if x["op"] == "all_reduce"]) == 7  # 1K..64K
PYEOF
  then ok "world $n: every result correct, busbw = algbw x factor"; else fail "world $n: JSON check failed"; cat "$WORK/comm$n.out"; fi
done

run_mtrain "$WORK/text.out" bench comm --nproc 2 --ops all_reduce,broadcast --min-bytes 4K --max-bytes 8K --iters 2 --warmup 0 \
  --plot "$WORK/busbw.svg"
expect_rc 0 "bench comm text with --plot"
expect_in "$WORK/text.out" "busbw(GB/s)"
expect_in "$WORK/text.out" "out of bounds values : 0 OK"
if command -v gnuplot >/dev/null || "$PY" -c 'import matplotlib' 2>/dev/null; then
  grep -q "<svg" "$WORK/busbw.svg" 2>/dev/null && ok "plot drawn as SVG" || fail "no SVG plot at $WORK/busbw.svg"
else
  expect_in "$WORK/text.out" "neither gnuplot nor matplotlib"
fi

run_mtrain "$WORK/badop.out" bench comm --nproc 2 --ops all_reduce,alltoall
expect_rc 2 "unknown collective refused"
expect_in "$WORK/badop.out" "unknown collective 'alltoall'"
run_mtrain "$WORK/badsize.out" bench comm --max-bytes 12Q
expect_rc 2 "bad size refused"
expect_in "$WORK/badsize.out" "--max-bytes '12Q' is not a size"
no_survivors "mtrain-worker bench-comm"
finish
