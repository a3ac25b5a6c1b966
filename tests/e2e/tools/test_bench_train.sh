#!/usr/bin/env bash
# `mtrain bench train` with the bundled trainer: a ddp cell reads its summary.json, a strategy
# that cannot run becomes a row carrying the worker's (or launcher's) error, and the exit code
# says that a cell failed. Two interleaved rounds of 1 warm-up + 3 timed steps: the row gives
# min <= median <= max over them.
. "$(dirname "$0")/../lib.sh"
[ -x "$(dirname "$MTRAIN")/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build needed)"

run_mtrain "$WORK/train.out" bench train --strategies ddp,bogus --nproc 1,2 --model mlp --steps 3 --warmup 1 --rounds 2 \
  --work-dir "$WORK/cells" --format json --output "$WORK/train.json"
expect_rc 1 "bench train with one impossible strategy"
if "$PY" - "$WORK/train.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["bench"] == "train" and r["failed"] == 2, r
rows = {(x["strategy"], x["nproc"]): x for x in r["rows"]}
for n in (1, 2):
    ok = rows[("ddp", n)]
    assert ok["status"] == "ok", ok
    assert ok["world_size"] == n and ok["steps"] == 4 and ok["rounds"] == 2, ok
    st = ok["step_time_s"]
    assert 0 < st["min"] <= st["median"] <= st["max"], st
    assert ok["step_time_median_s"] > 0 and ok["throughput"]["samples_per_s"] > 0, ok
    assert ok["model_state_bytes_total_per_rank"] > 0 and ok["peak_memory_bytes"] > 0, ok
    assert (ok["wire_bytes_per_step"] > 0) == (n > 1), ok
    bad = rows[("bogus", n)]
    assert bad["status"] == "failed" and "bogus" in bad["error"], bad
PYEOF
then ok "train rows: ddp measured, bogus failed with its error"; else fail "train JSON check failed"; cat "$WORK/train.out"; fi
[ -f "$WORK/cells/ddp-n2-r2/summary.json" ] && ok "--work-dir keeps each cell's work dir" || fail "no $WORK/cells/ddp-n2-r2/summary.json"

run_mtrain "$WORK/text.out" bench train --strategies ddp --nproc 2 --model mlp --steps 2 --warmup 0 --rounds 1
expect_rc 0 "bench train ddp at world 2 (text)"
expect_in "$WORK/text.out" "samples/s"
expect_in "$WORK/text.out" "ddp"
finish
