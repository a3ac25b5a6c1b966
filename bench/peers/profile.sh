#!/usr/bin/env bash
# Where a step's CPU time goes, mtrain against its PyTorch peer (issue 28, item 5: "where it is
# not [1.3x faster], the profile says why"). Each side of one pair of bench/peers/run.sh (same gpt,
# data, batch, AdamW, threads) runs twice under `perf record` (every process of the job: launcher,
# ranks), once for STEPS_SHORT and once for STEPS_LONG steps; the difference of the two sample
# counts, divided by the difference of the step counts, is the steady-state CPU time of one step
# with start-up (imports, model load, scripting, rendezvous) cancelled out. The samples are put
# in categories by library and symbol (the table below the script), summed over ranks, and
# printed as CPU milliseconds per step for each side, with the difference.
#
# usage: bench/peers/profile.sh [BUILD_DIR]     (a 2.x build: scripts/bootstrap --torch python)
#   env: PAIR ("ddp:ddp", an entry of run.sh's PAIRS) WORLD (2) STEPS_SHORT (8) STEPS_LONG (28)
#        FREQ (perf samples/s, 499) and sides.sh's WARMUP BATCH THREADS L H E T V PY
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
PAIR=${PAIR:-ddp:ddp} WORLD=${WORLD:-2} STEPS_SHORT=${STEPS_SHORT:-8} STEPS_LONG=${STEPS_LONG:-28} FREQ=${FREQ:-499}
command -v perf >/dev/null || { echo "bench/peers/profile: perf not found (apt-get install linux-perf)" >&2; exit 2; }
source "$here/bench/peers/sides.sh"
m=${PAIR%%:*} p=${PAIR#*:}

profile() {  # SIDE STEPS -> perf report lines "samples<TAB>dso<TAB>symbol" in $work/SIDE-STEPS.tsv
  local data="$work/$1-$2.perf"
  WRAP=(perf record -q -F "$FREQ" -o "$data" --) STEPS=$2
  if [ "$1" = mtrain ]; then run_mtrain "$m" "$WORLD" "$2" "$p" >"$work/$1-$2.fig"
  else run_pytorch "$p" "$WORLD" "$2" >"$work/$1-$2.fig"; fi
  perf report -i "$data" --stdio --no-children -q -g none --sort dso,sym -F sample,dso,sym 2>/dev/null |
    sed -E 's/^ *([0-9]+) +([^ ]+) +\[.\] (.*)$/\1\t\2\t\3/' | grep -P '^\d+\t' >"$work/$1-$2.tsv" || true
}
for side in mtrain pytorch; do
  for steps in "$STEPS_SHORT" "$STEPS_LONG"; do
    profile "$side" "$steps"
    echo "profiled $side ($([ $side = mtrain ] && echo "$m" || echo "$p")), world $WORLD, $steps steps" >&2
  done
done

"$PY" - "$work" "$STEPS_SHORT" "$STEPS_LONG" "$FREQ" "$m" "$p" <<'PY'
import collections, re, sys
work, short, long_, freq, m, p = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
# (category, library regex, symbol regex; None matches anything): the first row matching a
# sample's library and symbol names its place.
CATEGORIES = [
    ("matrix multiply (MKL / oneDNN / BLAS)", r"openblas|libmkl|libdnnl", None),
    ("matrix multiply (MKL / oneDNN / BLAS)", None, r"gemm|mkl_|dnnl|brgemm|jit_avx|jit_uni|cblas"),
    ("collectives (Gloo, mtrain shared memory)", r"gloo", None),
    ("collectives (Gloo, mtrain shared memory)", None, r"gloo|shm_coll|ShmColl|[Aa]ll_?[Rr]educe|[Rr]educe_?[Ss]catter|[Aa]ll_?[Gg]ather|c10d::|ProcessGroup"),
    ("optimizer (AdamW)", None, r"[Aa]dam|_foreach|multi_tensor"),
    ("ATen kernels (elementwise, softmax, norms, copies)", None, r"at::native|at::vec|Vectorized|cpu_kernel|vectorized_loop|basic_loop|_kernel|at::internal::|TensorIterator|softmax|layer_norm|gelu|embedding"),
    ("autograd, dispatch, TorchScript interpreter", None, r"torch::autograd|torch::jit|c10::|at::_ops|at::Tensor|at::TensorBase"),
    ("Python interpreter", r"python", None),
    ("memory (malloc, memcpy, memset)", r"libc[.-]", r"malloc|free|memcpy|memmove|memset|_int_|realloc|calloc"),
    ("OpenMP runtime (waiting threads)", r"libgomp|libiomp|libomp", None),
    ("kernel (page faults, scheduling, syscalls)", r"kernel", None),
]
def category(dso, sym):
    for name, lib, pat in CATEGORIES:
        if (lib is None or re.search(lib, dso)) and (pat is None or re.search(pat, sym)):
            return name
    return "other"
def load(side, steps):
    c = collections.Counter()
    for line in open(f"{work}/{side}-{steps}.tsv", errors="replace"):
        n, dso, sym = line.rstrip("\n").split("\t", 2)
        c[category(dso, sym)] += int(n)
    return c
def figures(side, steps):
    return float(open(f"{work}/{side}-{steps}.fig").read().split()[0])
per_step = {}
for side in ("mtrain", "pytorch"):
    a, b = load(side, short), load(side, long_)
    per_step[side] = {k: max(0.0, (b[k] - a[k]) / freq * 1e3 / (long_ - short)) for k in set(a) | set(b)}
names = list(dict.fromkeys(c[0] for c in CATEGORIES)) + ["other"]
peer = {"ddp": "PyTorch DDP", "fsdp2": "FSDP2", "zero1": "DeepSpeed ZeRO-1", "zero2": "DeepSpeed ZeRO-2", "zero3": "DeepSpeed ZeRO-3"}[p]
print(f"| CPU ms per step (all ranks) | mtrain {m} | {peer} | {peer} − mtrain |")
print("|---|---|---|---|")
tm, tp = 0.0, 0.0
for n in names:
    a, b = per_step["mtrain"].get(n, 0.0), per_step["pytorch"].get(n, 0.0)
    tm, tp = tm + a, tp + b
    if a or b:
        print(f"| {n} | {a:.1f} | {b:.1f} | {b - a:+.1f} |")
print(f"| **total** | **{tm:.1f}** | **{tp:.1f}** | **{tp - tm:+.1f}** |")
wm, wp = figures("mtrain", long_), figures("pytorch", long_)
print(f"\nwall ms per step (median, slowest rank, {long_}-step runs): mtrain {wm * 1e3:.1f}, {peer} {wp * 1e3:.1f}, speed-up {wp / wm:.2f}x")
PY
echo "command: PAIR=$PAIR WORLD=$WORLD STEPS_SHORT=$STEPS_SHORT STEPS_LONG=$STEPS_LONG FREQ=$FREQ BATCH=$BATCH THREADS=$THREADS L=$L H=$H E=$E T=$T V=$V bench/peers/profile.sh $build"
