#!/usr/bin/env bash
# Output handling: prefixes, --no-prefix, --ranks-filter, --log-dir (+ --tee), -m, --local-rank-arg,
# MTRAIN_<FLAG> variables, --dry-run JSON.
. "$(dirname "$0")/../lib.sh"
# Any free port: the default 29500 may be taken on a shared machine (a busy port is tested elsewhere).
export MTRAIN_MASTER_PORT=auto
h=$(hostname)
run_mtrain "$WORK/p" launch --nproc-per-node 2 -- bash -c 'echo out-$RANK; echo err-$RANK >&2'
expect_in "$WORK/p" "[$h:1] out-1"
expect_in "$WORK/p" "[$h:0] err-0"
run_mtrain "$WORK/n" launch --nproc-per-node 2 --no-prefix --ranks-filter 1 -- bash -c 'echo out-$RANK'
expect_in "$WORK/n" "out-1"
expect_not_in "$WORK/n" "out-0"
expect_not_in "$WORK/n" "[$h"
run_mtrain "$WORK/f" launch --nproc-per-node 2 --prefix '<{rank}/{local_rank}> ' -- bash -c 'echo hi'
expect_in "$WORK/f" "<1/1> hi"

run_mtrain "$WORK/l" launch --nproc-per-node 2 --job-id logjob --log-dir "$WORK/logs" -- bash -c 'echo out-$RANK; echo err-$RANK >&2'
expect_rc 0 "--log-dir run"
expect_not_in "$WORK/l" "out-0"
grep -qx "out-1" "$WORK/logs/logjob/attempt_0/1/stdout.log" && ok "rank 1 stdout file" || fail "rank 1 stdout file"
grep -qx "err-0" "$WORK/logs/logjob/attempt_0/0/stderr.log" && ok "rank 0 stderr file" || fail "rank 0 stderr file"
[ "$(stat -c %a "$WORK/logs/logjob/attempt_0/0/stdout.log")" = 640 ] && ok "log files not world-readable" || fail "log file mode"
run_mtrain "$WORK/t" launch --nproc-per-node 1 --job-id teejob --log-dir "$WORK/logs" --tee -- bash -c 'echo tee-$RANK'
expect_in "$WORK/t" "tee-0"

run_mtrain "$WORK/m" launch --nproc-per-node 1 --local-rank-arg -m platform
expect_rc 0 "-m runs python3 -m"
run_mtrain "$WORK/r" launch --nproc-per-node 2 --local-rank-arg -- bash -c 'echo "args: $*"' x
expect_in "$WORK/r" "args: --local_rank=1"

MTRAIN_NPROC_PER_NODE=3 run_mtrain "$WORK/e" launch --dry-run --format json -- /bin/true
expect_in "$WORK/e" '"world_size": 3'
"$MTRAIN" launch --nproc-per-node 2 --dry-run --format json -- python3 train.py >"$WORK/j"
"$PY" - "$WORK/j" <<'PYEOF' && ok "dry-run JSON has the contract's keys" || fail "dry-run JSON"
import json, sys
p = json.load(open(sys.argv[1]))
for k in ["version", "job_id", "world_size", "nnodes", "master_addr", "master_port", "rdzv", "nodes"]:
    assert k in p, k
w = p["nodes"][0]["workers"][1]
assert w["rank"] == 1 and w["local_rank"] == 1 and w["gpu"] is None and w["argv"] == ["python3", "train.py"]
assert w["env"]["WORLD_SIZE"] == "2"
PYEOF
run_mtrain "$WORK/v" --version
expect_in "$WORK/v" "mtrain 0."
run_mtrain "$WORK/u" slurm status 1
expect_rc 2 "an unbuilt subcommand says so"
finish
