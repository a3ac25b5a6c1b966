#!/usr/bin/env bash
# `mtrain bench rendezvous --backend mtrain,etcd` at a small N (issue 43 item 4): both backends
# form every node and heartbeat; etcd's row comes from a local 3-member cluster the bench starts
# (and stops: no etcd of this run is left) with the members' CPU measured. ~10 s.
. "$(dirname "$0")/../lib.sh"
command -v etcd >/dev/null || skip "etcd is not installed (apt-get install etcd-server)"

# The bench's etcd data (and so its members' command lines) under this test's folder.
export TMPDIR="$WORK"
run_mtrain "$WORK/rdzv.out" bench rendezvous --backend mtrain,etcd --nodes 8,16 --heartbeat-seconds 2 --format json \
  --output "$WORK/rdzv.json"
expect_rc 0 "bench rendezvous"
if "$PY" - "$WORK/rdzv.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
rows = {(x["backend"], x["nodes"]): x for x in r["rows"]}
assert sorted(rows) == [("etcd", 8), ("etcd", 16), ("mtrain", 8), ("mtrain", 16)], rows
for (b, n), x in rows.items():
    assert x["form_s"] > 0, x
    # one heartbeat per node every 2 s over 2 s: about n/2 a second (the first phases start at once)
    assert x["heartbeats_per_s"] >= n / 4, x
    assert x["store_cpu_us_per_beat"] is not None and x["store_cpu_us_per_beat"] > 0, x
    assert (x["max_connections"] is None) == (b == "etcd"), x
PYEOF
then ok "both backends formed 8 and 16 nodes and heartbeat; etcd's members' CPU measured"
else fail "rows: $(cat "$WORK/rdzv.json")"; fi
pgrep -f "$WORK/mtrain-bench-etcd-" >/dev/null && fail "an etcd member of the bench is left running" || ok "the bench's etcd cluster is stopped"
finish
