# Reads the resolved job mtrain hands a program in MTRAIN_JOB_FILE and checks the values the
# test gave (EXPECT_JOB = dotted.key=value,...; values compared as JSON, else as text).
import json
import os

path = os.environ["MTRAIN_JOB_FILE"]
with open(path) as f:
    job = json.load(f)
for kv in os.environ["EXPECT_JOB"].split(","):
    key, want = kv.split("=", 1)
    node = job
    for part in key.split("."):
        node = node[part]
    try:
        want = json.loads(want)
    except ValueError:
        pass
    assert node == want, f"{key} = {node!r}, expected {want!r}"
print(f"job file ok rank {os.environ['RANK']}: {path}", flush=True)
