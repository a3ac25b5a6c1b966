#!/usr/bin/env bash
# torchrun habits: its flag spellings (underscore, dash, '=' forms) with torchrun's meaning, a
# .py program run with Python, refused flags naming mtrain's equivalent, and typos caught before
# the program (did-you-mean, exit 2) — under --dry-run too.
. "$(dirname "$0")/../lib.sh"
export MTRAIN_PYTHON=$PY
cd "$WORK"
cat >peer.py <<'PYEOF'
import os, sys
print(f"peer rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']} via {sys.executable} args {sys.argv[1:]}", flush=True)
PYEOF

# As typed for torchrun: '=' forms, no `--`, the .py program runs with Python.
run_mtrain "$WORK/o1" launch --nproc_per_node=2 --master_port=0 peer.py --lr 3
expect_rc 0 "torchrun-style --nproc_per_node=2 --master_port=0 peer.py"
expect_in "$WORK/o1" "peer rank 0 of 2 via $PY args ['--lr', '3']"
expect_in "$WORK/o1" "peer rank 1 of 2 via $PY"

# torchrun 2.x dash spellings, --standalone and the flags mtrain accepts as no-ops.
run_mtrain "$WORK/o2" launch --standalone --nnodes=1 --nproc-per-node 2 --max_restarts=0 --monitor_interval 1 --master-port 0 peer.py
expect_rc 0 "--standalone --nproc-per-node 2 peer.py"
expect_in "$WORK/o2" "peer rank 1 of 2"
expect_in "$WORK/o2" "mtrain: note: --standalone"

# The interpreter is explicit and shown by --dry-run: --python, MTRAIN_PYTHON, else python3 on PATH.
run_mtrain "$WORK/d1" launch --dry-run --format json --nproc_per_node=2 train.py a
expect_rc 0 "dry run of a .py program"
"$PY" - "$WORK/d1" "$PY" <<'PYEOF' && ok "argv is [MTRAIN_PYTHON, -u, train.py, a]" || fail "dry-run argv"
import json, sys
plan = json.load(open(sys.argv[1]))
argv = plan["nodes"][0]["workers"][1]["argv"]
assert plan["world_size"] == 2 and argv == [sys.argv[2], "-u", "train.py", "a"], argv
PYEOF
env -u MTRAIN_PYTHON "$MTRAIN" launch --dry-run --format json train.py >"$WORK/d2" 2>&1
expect_in "$WORK/d2" "\"$(command -v python3)\""
run_mtrain "$WORK/d3" launch --dry-run --python /opt/none/python9 train.py
expect_rc 2 "--python that does not exist"
expect_in "$WORK/d3" "--python PATH"

# A missing .py program: exit 2 before any rank starts (not Python's own error from every rank).
run_mtrain "$WORK/m1" launch --nproc_per_node 2 /nonexistent/train.py
expect_rc 2 "missing .py program"
expect_in "$WORK/m1" "program '/nonexistent/train.py' does not exist"
expect_not_in "$WORK/m1" "can't open file"

# --no_python executes the program itself; -m runs a module with the same interpreter.
printf '#!/bin/sh\necho "script rank $RANK"\n' >run.py && chmod +x run.py
run_mtrain "$WORK/o3" launch --no_python --master_port 0 ./run.py
expect_rc 0 "--no_python ./run.py"
expect_in "$WORK/o3" "script rank 0"
mkdir -p pkg && cp peer.py pkg/peer.py
PYTHONPATH=$WORK run_mtrain "$WORK/o4" launch -m --master-port 0 pkg.peer x
expect_rc 0 "-m pkg.peer"
expect_in "$WORK/o4" "via $PY args ['x']"
run_mtrain "$WORK/o5" launch -m --no-python --dry-run pkg.peer
expect_rc 2 "-m with --no-python"

# torchrun's --log_dir keeps the console; --tee 3 too; files land under the log dir.
run_mtrain "$WORK/o6" launch --log_dir "$WORK/logs" --tee 3 --nproc_per_node 2 --master_port 0 peer.py
expect_rc 0 "--log_dir DIR --tee 3"
expect_in "$WORK/o6" "peer rank 1 of 2"
[ -n "$(find "$WORK/logs" -name 'stdout.log' | head -1)" ] && ok "per-rank log files written" || fail "no log files under $WORK/logs"

# Refused flags: exit 2 and the mtrain equivalent.
refused "--python PATH" --run_path peer.py
refused "--node-name NAME" --local_addr 10.0.0.1 peer.py
refused "--node-name NAME" --local-addr=10.0.0.1 peer.py
refused "join_timeout (--rdzv-timeout)" --rdzv_conf read_timeout=5 peer.py
refused "--ranks-filter" --log_dir "$WORK/l2" --tee 1 peer.py
refused "--ranks-filter" --log_dir "$WORK/l2" --redirects 0:3,1:0 peer.py
refused "Add --log_dir DIR" --redirects 3 peer.py
refused "--ranks-filter 0,1" --local_ranks_filter 0 peer.py
refused "never by fork" --start_method fork peer.py

# Accepted rdzv_conf keys become mtrain's rendezvous settings (shown by a dry run).
run_mtrain "$WORK/d4" launch --dry-run --rdzv_conf join_timeout=60,last_call_timeout=5 --nproc_per_node 1 peer.py
expect_rc 0 "--rdzv_conf join_timeout=60,last_call_timeout=5"

# Typos: an unknown flag before the program is never taken as the program.
run_mtrain "$WORK/t1" launch --stratgy zero3 -- python3 train.py
expect_rc 2 "typo --stratgy"
expect_in "$WORK/t1" "unknown option --stratgy before the program"
expect_in "$WORK/t1" "Did you mean --strategy?"
run_mtrain "$WORK/t2" launch --dry-run --nproc_per_nod=2 train.py
expect_rc 2 "typo under --dry-run"
expect_in "$WORK/t2" "Did you mean --nproc_per_node?"
expect_not_in "$WORK/t2" "world_size"
run_mtrain "$WORK/t3" launch --dry-run --nproc_per_node=2 -- python3 train.py
expect_rc 0 "the issue's line with '--' plans two ranks"
expect_in "$WORK/t3" "python3 train.py"

# Help: a separate Compatibility section generated from the table.
run_mtrain "$WORK/h" launch --help
expect_in "$WORK/h" "Compatibility (torchrun, deepspeed and \`accelerate launch\` spellings"
expect_in "$WORK/h" "--nproc_per_node V"
expect_in "$WORK/h" "--num_processes, --num-processes V"
finish
