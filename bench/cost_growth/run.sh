#!/usr/bin/env bash
# Cost growth: step time and peak memory per rank against model size and world size, for ddp,
# zero3 and fsdp, with where the CPU time goes. Each cell is one `mtrain launch` of the gpt
# (vocab 8192, context 32, batch 1 per rank, fp32 AdamW, 1 thread per rank), WARMUP untimed + STEPS
# timed steps, read back from summary.json.
#
# Sizes (Ψ from the gpt's own count, printed): 25M (n_embd 512 x 6 layers), 100M (1024 x 7),
# 220M (1280 x 10), and max (2048 x 10, ~537M): the largest this 24 GiB machine holds at world 4
# when the model state is sharded. A cell whose model state alone (16Ψ bytes per replica, ×ranks
# for ddp, /ranks per rank for zero3/fsdp, as docs/architecture.md §6) would exceed 80% of the
# available memory is not started and is reported as "does not fit (needs X GB)".
#
# Where the time goes: with PROFILE=1 every cell at the largest world size also runs once under
# `perf record -e cpu-clock` (all ranks; the launcher's children are followed), and the samples
# are sorted by symbol into compute (BLAS, elementwise and attention kernels), optimizer (AdamW
# on the flat shards), communication (Gloo, the shared-memory collectives, waiting), copies
# (memcpy/memset, tensor copies and the kernel's page zeroing/faults) and other.
#
# usage: bench/cost_growth/run.sh [--plot FILE.png|FILE.svg] [BUILD_DIR]
#   env: SIZES ("25M 100M 220M max")  WORLDS ("1 2 4")  STRATEGIES ("ddp zero3 fsdp")
#        STEPS (5)  WARMUP (1)  PROFILE (1)
#        WORK_DIR (unset: a temporary folder, removed at the end): the cells' summaries and profiles
#          are kept there, and a cell whose results are already there is not run again — a sweep
#          cut short is finished, or reported on what it has, by running it again with the same
#          WORK_DIR (and SIZES/WORLDS/STRATEGIES narrowed to the cells that ran).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PLOT=""
if [ "${1:-}" = --plot ]; then PLOT=${2:?--plot needs a file name}; shift 2; fi
build=${1:-$here/../../build}
mtrain=$build/bin/mtrain
py=/usr/bin/python3
SIZES=${SIZES:-"25M 100M 220M max"}
WORLDS=${WORLDS:-"1 2 4"}
STRATEGIES=${STRATEGIES:-"ddp zero3 fsdp"}
STEPS=${STEPS:-5} WARMUP=${WARMUP:-1} PROFILE=${PROFILE:-1}
for b in mtrain mtrain-worker; do
  [ -x "$build/bin/$b" ] || { echo "run.sh: $build/bin/$b not found; build with: ninja -C $build mtrain mtrain-worker" >&2; exit 2; }
done
if [ "$PROFILE" = 1 ] && ! command -v perf >/dev/null; then
  echo "run.sh: PROFILE=1 needs perf (apt-get install linux-perf); running without the profile" >&2
  PROFILE=0
fi
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-131072}  # as bench/strategies: peak RSS = live memory
if [ -n "${WORK_DIR:-}" ]; then
  mkdir -p "$WORK_DIR" && tmp=$(cd "$WORK_DIR" && pwd)
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi
total_steps=$((WARMUP + STEPS))
max_world=$(for n in $WORLDS; do echo "$n"; done | sort -n | tail -1)

shape() {  # size label -> "n_embd n_layer"
  case $1 in
    25M) echo "512 6" ;; 100M) echo "1024 7" ;; 220M) echo "1280 10" ;; max) echo "2048 10" ;;
    *) echo "run.sh: unknown size '$1' (25M, 100M, 220M or max)" >&2; exit 2 ;;
  esac
}
psi_of() {  # n_embd n_layer -> parameters of the gpt (vocab 8192, context 32, untied head)
  echo $(( 2 * 8192 * $1 + 32 * $1 + $2 * (12 * $1 * $1 + 13 * $1) + 2 * $1 ))
}
avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)

rows=()
for size in $SIZES; do
  read -r d l < <(shape "$size")
  psi=$(psi_of "$d" "$l")
  for s in $STRATEGIES; do
    for n in $WORLDS; do
      # Model state on this machine in KB: every replica for ddp, one copy in all for zero3/fsdp.
      [ "$s" = ddp ] && need_kb=$((16 * psi * n / 1024)) || need_kb=$((16 * psi / 1024))
      label=${s}_${size}_$n
      if [ $((need_kb * 10)) -gt $((avail_kb * 8)) ]; then
        rows+=("nofit|$s|$size|$n|$psi|$need_kb")
        echo "run.sh: $s $size at world $n does not fit ($((need_kb / 1048576)) GB of model state)" >&2
        continue
      fi
      wd=$tmp/$label
      cmd=("$mtrain" launch --nproc-per-node "$n" --strategy "$s" --no-prefix --master-port 0
           --set model.name=gpt --set model.n_embd="$d" --set model.n_layer="$l" --set model.n_head=8
           --set model.vocab_size=8192 --set model.block_size=32 --set data.name=synthetic
           --set data.val_fraction=0 --set train.batch_size=1 --set train.max_steps="$total_steps"
           --set train.timing_warmup_steps="$WARMUP" --set train.log_interval="$total_steps"
           --set train.threads=1 --set train.work_dir="$wd" --set checkpoint.interval=0)
      prof=""
      [ "$PROFILE" = 1 ] && [ "$n" = "$max_world" ] && prof=$tmp/$label.perf
      if [ -f "$wd/summary.json" ] && { [ -z "$prof" ] || [ -s "$prof" ]; }; then
        echo "run.sh: $s $size at world $n: results already in $wd" >&2
        rows+=("ok|$s|$size|$n|$psi|$wd/summary.json|$prof|$(printf '%q ' "${cmd[@]}")")
        continue
      fi
      rm -rf "$wd"
      echo "run.sh: $s $size (psi $psi) at world $n" >&2
      if ! OMP_NUM_THREADS=1 timeout 1800 "${cmd[@]}" >"$wd.log" 2>&1 || [ ! -f "$wd/summary.json" ]; then
        echo "run.sh: $label failed; its output:" >&2
        tail -20 "$wd.log" >&2
        rows+=("failed|$s|$size|$n|$psi|0")
        continue
      fi
      if [ -n "$prof" ]; then
        # The profiled run is a second launch (perf slows it); its work folder is apart so the
        # table's figures stay those of the unprofiled run.
        pcmd=()
        for a in "${cmd[@]}"; do [ "$a" = "train.work_dir=$wd" ] && pcmd+=("train.work_dir=$wd.prof") || pcmd+=("$a"); done
        OMP_NUM_THREADS=1 timeout 1800 perf record -q -e cpu-clock -F 499 -o "$prof.data" -- "${pcmd[@]}" \
          >"$wd.perf.log" 2>&1 || true
        perf report -i "$prof.data" --stdio --no-children --sort sym -q 2>/dev/null >"$prof" || true
        rm -rf "$prof.data" "$wd.prof"
      fi
      rm -rf "$wd/checkpoints" "$wd/model.pt"
      rows+=("ok|$s|$size|$n|$psi|$wd/summary.json|$prof|$(printf '%q ' "${cmd[@]}")")
    done
  done
done

$py - "$PLOT" "$STEPS" "$WARMUP" "${rows[@]}" <<'PY'
import json, re, subprocess, sys
plot, steps, warmup = sys.argv[1:4]
# Symbol classes for the profile, first match wins.
classes = [
    ("startup+output", r"do_lookup_x|_dl_|^dl_|OperatorEntry|Dispatcher|CPUGeneratorImpl|normal_|copy_folio|ext4|filemap|crc32|pwrite|write_|generic_perform_write"),
    ("optimizer", r"adam|Adam|sgd|Sgd|FlatOptimizer|addcdiv|lerp|_foreach"),
    ("communication", r"gloo|Gloo|[Ss]hm|Communicator|futex|poll|recv|send|tcp_|sock|sched_yield|__pthread_cond|nanosleep|do_sched"),
    ("copies", r"memcpy|memmove|memset|copy_|clear_page|page_fault|do_anonymous_page|_raw_spin|zap_|unmap|mmap|free_pages|release_pages|alloc_pages|rmqueue|get_page|lru"),
    ("compute", r"gemm|sgemm|dgemm|blas|openblas|kernel|mm_|addmm|bmm|softmax|layer_norm|gelu|exp|tanh|vectorized|Vectorized|at::native|_vec|dot|axpy|reduce|mul|add|div|sum"),
]
def classify(path):
    tot = {c: 0.0 for c, _ in classes}
    tot["other"] = 0.0
    for line in open(path):
        m = re.match(r"\s*([\d.]+)%\s+\[[.k]\]\s+(.*)", line)
        if not m:
            continue
        pct, sym = float(m.group(1)), m.group(2)
        for c, rx in classes:
            if re.search(rx, sym):
                tot[c] += pct
                break
        else:
            tot["other"] += pct
    return tot

out = []
for arg in sys.argv[4:]:
    f = arg.split("|")
    kind, s, size, n, psi = f[0], f[1], f[2], int(f[3]), int(f[4])
    if kind != "ok":
        out.append(dict(s=s, size=size, n=n, psi=psi, kind=kind, need=int(f[5]) * 1024))
        continue
    j = json.load(open(f[5]))
    st = j.get("step_time_s", {})
    prof = classify(f[6]) if f[6] else None
    out.append(dict(s=s, size=size, n=n, psi=j["num_params"], kind=kind, med=j["step_time_median_s"],
                    lo=st.get("min", 0), hi=st.get("max", 0), peak=j["peak_memory_bytes"] / 2**20,
                    comm=j["wire_bytes_per_step"] / 2**20, prof=prof, cmd=f[7]))
print(f"# gpt, vocab 8192, context 32, batch 1/rank, fp32 AdamW, 1 thread/rank; {warmup} warm-up + {steps} timed steps")
print("| size | Ψ | strategy | world | step s (min/med/max) | peak MB/rank | comm MB/step | compute | optimizer | comm | copies | start-up+output | other |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in out:
    if r["kind"] == "nofit":
        print(f"| {r['size']} | {r['psi']/1e6:.1f}M | {r['s']} | {r['n']} | does not fit (model state {r['need']/2**30:.1f} GB) | | | | | | | | |")
        continue
    if r["kind"] == "failed":
        print(f"| {r['size']} | {r['psi']/1e6:.1f}M | {r['s']} | {r['n']} | failed | | | | | | | | |")
        continue
    p = r["prof"]
    pc = " | ".join(f"{p[c]:.0f}%" for c in ("compute", "optimizer", "communication", "copies", "startup+output", "other")) if p else " | | | | | "
    print(f"| {r['size']} | {r['psi']/1e6:.1f}M | {r['s']} | {r['n']} | {r['lo']:.2f}/{r['med']:.2f}/{r['hi']:.2f} | "
          f"{r['peak']:.0f} | {r['comm']:.0f} | {pc} |")
print()
print("# profile columns: share of cpu-clock samples of all ranks at the largest world size (perf record -e cpu-clock);")
print("# start-up+output = dynamic linking, operator registration, weight init, the final checkpoint and model.pt")
for r in out:
    if r["kind"] == "ok":
        print(f"# {r['s']} {r['size']} N={r['n']}: {r['cmd']}")
if plot:
    ok = [r for r in out if r["kind"] == "ok"]
    dat = plot + ".dat"
    keys = sorted({(r["s"], r["n"]) for r in ok})
    with open(dat, "w") as fh:
        for s, n in keys:
            fh.write(f'"{s} N={n}"\n')
            for r in sorted((r for r in ok if r["s"] == s and r["n"] == n), key=lambda r: r["psi"]):
                fh.write(f"{r['psi']/1e6} {r['med']} {r['peak']}\n")
            fh.write("\n\n")
    idx = len(keys)
    term = "svg size 1200,500" if plot.endswith(".svg") else "pngcairo size 1200,500"
    script = f"""set terminal {term}
set output '{plot}'
set multiplot layout 1,2
set key left top
set xlabel 'parameters (M)'
set ylabel 'step time (s)'
set title 'step time vs model size'
plot for [i=0:{idx - 1}] '{dat}' index i using 1:2 with linespoints title columnheader(1)
set ylabel 'peak memory per rank (MB)'
set title 'peak memory per rank vs model size'
plot for [i=0:{idx - 1}] '{dat}' index i using 1:3 with linespoints title columnheader(1)
unset multiplot
"""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        print(f"# plot: {plot}")
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"# no plot ({e}); install gnuplot-nox", file=sys.stderr)
PY
