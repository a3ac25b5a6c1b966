# An accelerate-style script: checks the variables `accelerate launch` sets for its scripts
# (accelerate/utils/launch.py) against the values the test expects (EXPECT_* = NAME=VALUE,...),
# and that the variables of a strategy not in use are absent.
import os

e = os.environ
expected = dict(kv.split("=", 1) for kv in e["EXPECT_ACCELERATE"].split(",") if kv)
for name, value in expected.items():
    assert e.get(name) == value, f"{name}={e.get(name)!r}, expected {value!r}"
for name in e.get("EXPECT_ABSENT", "").split(","):
    assert not name or name not in e, f"{name} is set: {e[name]!r}"
assert int(e["WORLD_SIZE"]) == int(e["EXPECT_WORLD"]), e["WORLD_SIZE"]
print(f"accelerate env ok rank {e['RANK']}: " + " ".join(f"{k}={e[k]}" for k in sorted(expected)), flush=True)
