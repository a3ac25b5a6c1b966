"""Side-by-side all-reduce busbw: `mtrain bench comm` (its --format json files) against the c10d
baseline (its JSON lines, possibly prefixed by mtrain launch's "[host:rank] "), one pair per round.
Prints each round and, over all rounds, the median busbw of each side and their ratio.
Usage: compare.py MTRAIN_1.json C10D_1.txt [MTRAIN_2.json C10D_2.txt ...]"""
import json
import statistics
import sys


def mtrain_rows(path):
    return {r["bytes"]: r["busbw_gbps"] for r in json.load(open(path))["rows"] if r["op"] == "all_reduce"}


def c10d_rows(path):
    out = {}
    for line in open(path):
        if "{" in line:
            r = json.loads(line[line.find("{"):])
            out[r["bytes"]] = r["busbw_gbps"]
    return out


pairs = [(mtrain_rows(a), c10d_rows(b)) for a, b in zip(sys.argv[1::2], sys.argv[2::2])]
sizes = sorted(set.intersection(*[set(m) & set(c) for m, c in pairs]))
head = f"{'size':>10} {'mtrain busbw GB/s':>18} {'c10d python GB/s':>17} {'mtrain/c10d':>12}"
for i, (m, c) in enumerate(pairs, 1):
    print(f"round {i}\n{head}")
    for s in sizes:
        print(f"{s:>10} {m[s]:>18.3f} {c[s]:>17.3f} {m[s] / c[s]:>11.1%}")
print(f"median over {len(pairs)} round(s)\n{head}")
for s in sizes:
    mm = statistics.median(m[s] for m, _ in pairs)
    cc = statistics.median(c[s] for _, c in pairs)
    print(f"{s:>10} {mm:>18.3f} {cc:>17.3f} {mm / cc:>11.1%}")
