#!/usr/bin/env bash
# `mtrain env` on this machine: the JSON report's schema, the text report, the no-GPU line when
# the machine has no NVIDIA driver, and a warning with advice for a variable pointing nowhere.
. "$(dirname "$0")/../lib.sh"

run_mtrain "$WORK/env.json" env --format json
expect_rc 0 "mtrain env --format json"
if "$PY" - "$WORK/env.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "mtrain.env/1", r["schema"]
for k, t in [("mtrain", dict), ("os", dict), ("cpu", dict), ("memory", dict), ("gpus", dict), ("network", list),
             ("slurm", dict), ("environment", list), ("user_config", dict), ("shm", dict), ("limits", dict), ("warnings", list)]:
    assert isinstance(r[k], t), k
assert isinstance(r["cpu"]["cores"], int) and r["cpu"]["cores"] >= 1
assert r["memory"]["total_bytes"] > 0
assert any(n["name"] == "lo" for n in r["network"])
assert r["gpus"]["source"] in ("none", "nvidia-smi")
for e in r["environment"]:
    assert {"name", "value", "source"} <= set(e), e
for w in r["warnings"]:
    assert set(w) == {"what", "advice"}, w
w = r["mtrain"]["worker"]
assert "build" in w or "error" in w
if "build" in w:
    assert w["build"]["libtorch"] and isinstance(w["build"]["cuda"]["compiled"], bool)
PYEOF
then ok "env JSON follows the schema"; else fail "env JSON does not follow the schema"; fi

run_mtrain "$WORK/env.txt" env
expect_rc 0 "mtrain env"
for section in mtrain system gpus network slurm environment warnings; do expect_in "$WORK/env.txt" "$section"; done
if ! command -v nvidia-smi >/dev/null; then
  expect_in "$WORK/env.txt" "no GPU: nvidia-smi is not installed"
fi

NCCL_SOCKET_IFNAME=nosuchif0 OMP_NUM_THREADS=999 MTRAIN_STRATEGY=zero9 run_mtrain "$WORK/warn.txt" env
expect_rc 0 "mtrain env with bad variables"
expect_in "$WORK/warn.txt" "NCCL_SOCKET_IFNAME=nosuchif0 names no interface of this host"
expect_in "$WORK/warn.txt" "OMP_NUM_THREADS=999"
expect_in "$WORK/warn.txt" "MTRAIN_STRATEGY=zero9"
expect_in "$WORK/warn.txt" "nosuchif0   (environment; NCCL)"
# A name longer than the old 16-character key column still has a space before its value.
expect_not_in "$WORK/warn.txt" "NCCL_SOCKET_IFNAME:nosuchif0"

run_mtrain "$WORK/bad.txt" env --format yaml
expect_rc 2 "mtrain env --format yaml is refused"
finish
