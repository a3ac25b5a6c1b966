#!/usr/bin/env bash
# `mtrain bench launch`: both rank programs at world 1 and 2, JSON rows with samples, and the
# torchrun floor when /usr/bin/python3 has torch.
. "$(dirname "$0")/../lib.sh"

run_mtrain "$WORK/launch.out" bench launch --nproc 1,2 --reps 2 --format json --output "$WORK/launch.json"
expect_rc 0 "bench launch"
if "$PY" - "$WORK/launch.json" "$(dirname "$MTRAIN")" <<'PYEOF'
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["bench"] == "launch" and r["reps"] == 2
rows = r["rows"]
native = [x for x in rows if "__barrier" in x["program"]]
assert sorted(x["nproc"] for x in native) == [1, 2], rows
has_worker = os.access(os.path.join(sys.argv[2], "mtrain-worker"), os.X_OK)
assert has_worker == any("mtrain-worker" in x["program"] for x in rows)
first = {x["command"].split()[-1]: x for x in rows if x["program"].startswith("first answer: mtrain ")}
assert sorted(first) == ["--help", "--version"] and all(x["nproc"] is None for x in first.values()), rows
for x in rows:
    assert len(x["samples"]) == 2 and x["median_s"] > 0, x
try:
    import torch.distributed.run  # noqa: F401
    assert r["floor_s"] and r["floor_s"] > 0
except ImportError:
    assert r["floor_s"] is None
PYEOF
then ok "launch JSON rows"; else fail "launch JSON check failed"; cat "$WORK/launch.out"; fi

# The rank program by hand: two ranks meet at the barrier.
run_mtrain "$WORK/barrier.out" launch --nproc-per-node 3 --master-port auto -- "$MTRAIN" __barrier
expect_rc 0 "mtrain launch -- mtrain __barrier at world 3"

# --plot asks for a tool that is missing: a clear message before anything is timed.
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null && ! python3 -c 'import matplotlib' 2>/dev/null; then
  run_mtrain "$WORK/noplot.out" bench launch --nproc 1 --reps 1 --plot "$WORK/x.png" --plotter matplotlib
  expect_rc 1 "--plotter matplotlib without matplotlib"
  expect_in "$WORK/noplot.out" "apt-get install python3-matplotlib"
  expect_not_in "$WORK/noplot.out" "median(ms)"
fi
if command -v gnuplot >/dev/null; then
  run_mtrain "$WORK/plot.out" bench launch --nproc 1,2 --reps 1 --no-worker --python "" --plot "$WORK/launch.png"
  expect_rc 0 "bench launch --plot with gnuplot"
  [ "$(head -c 4 "$WORK/launch.png" | od -An -c | tr -d ' ')" = "211PNG" ] && ok "PNG drawn" || fail "no PNG at $WORK/launch.png"
fi
run_mtrain "$WORK/badplot.out" bench launch --plot "$WORK/x.pdf"
expect_rc 2 "--plot x.pdf refused"
expect_in "$WORK/badplot.out" "must end in .png or .svg"

run_mtrain "$WORK/bad.out" bench launch --nproc 0
expect_rc 2 "--nproc 0 refused"
expect_in "$WORK/bad.out" "is not a whole number >= 1"
finish
