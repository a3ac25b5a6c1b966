"""Time shell commands, interleaved round-robin so machine noise hits all alike; print medians."""
import shlex
import statistics
import subprocess
import sys
import time

runs = int(sys.argv[1])
pairs = list(zip(sys.argv[2::2], sys.argv[3::2]))
times = {label: [] for label, _ in pairs}
for _ in range(runs):
    for label, cmd in pairs:
        t0 = time.perf_counter()
        subprocess.run(shlex.split(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times[label].append(time.perf_counter() - t0)
base = statistics.median(times[pairs[-1][0]])
print(f"{'command':<52} {'median ms':>10} {'min ms':>8} {'vs last':>8}")
for label, _ in pairs:
    med = statistics.median(times[label])
    print(f"{label:<52} {med * 1e3:>10.2f} {min(times[label]) * 1e3:>8.2f} {med / base:>8.3f}")
print(f"({runs} runs each, interleaved; command: bench/launch/run.sh)")
