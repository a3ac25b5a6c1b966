"""Side-by-side busbw: `mtrain bench comm` (JSON file) against the c10d baseline (its JSON lines,
possibly prefixed by mtrain launch's "[host:rank] "). Prints a table and the ratio per size."""
import json
import sys

mtrain = {r["bytes"]: r for r in json.load(open(sys.argv[1]))["rows"] if r["op"] == "all_reduce"}
base = {}
for line in open(sys.argv[2]):
    line = line[line.find("{"):] if "{" in line else ""
    if line:
        r = json.loads(line)
        base[r["bytes"]] = r
print(f"{'size':>10} {'mtrain busbw GB/s':>18} {'c10d python GB/s':>17} {'mtrain/c10d':>12}")
for size in sorted(set(mtrain) & set(base)):
    m, b = mtrain[size]["busbw_gbps"], base[size]["busbw_gbps"]
    print(f"{size:>10} {m:>18.3f} {b:>17.3f} {m / b:>11.1%}")
