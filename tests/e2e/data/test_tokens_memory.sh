#!/usr/bin/env bash
# The tokens dataset is memory-mapped, never read whole: the same world-2 job on a 64 MiB and on a
# 1 GiB token file (sparse, so they cost neither disk nor time to write) peaks at the same RSS per
# rank within 5% (summary.json's peak_memory_bytes: the fullest rank's VmHWM), and the large file
# is at least twice that peak.
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
"$PY" -c 'import numpy' 2>/dev/null || skip "/usr/bin/python3 has no numpy"
GEN="$(dirname "$0")/token_files.py"
export TMPDIR="$WORK"
# Peak RSS is a live-memory measure only with a fixed mmap threshold (as bench/strategies sets):
# glibc otherwise raises it as large blocks are freed, and freed tensors then stay resident in
# the heap by chance of timing (runs of the same file varied by 40 MiB without this).
export MALLOC_MMAP_THRESHOLD_=131072
# Long windows keep the sampler's index list (8 bytes per window and epoch) a small part of the
# comparison: it is the one thing in a rank that grows with the file.
job=(--nproc-per-node 2 --master-port 0 --model gpt --data tokens --max-steps 8
     --set model.n_layer=1 --set model.n_head=2 --set model.n_embd=32 --set model.block_size=1024
     --set model.vocab_size=512 --set train.batch_size=2 --set data.val_fraction=0
     --set train.log_interval=4)

declare -A peak
for mib in 64 1024; do
  f="$WORK/corpus_${mib}.bin"
  "$PY" "$GEN" nanogpt "$f" $((mib * 1024 * 1024 / 2)) --vocab 512 --dense-mib 4
  run_mtrain "$WORK/run_$mib" launch "${job[@]}" --data-path "$f" --work-dir "$WORK/wd_$mib"
  expect_rc 0 "world 2 on a $mib MiB token file"
  peak[$mib]=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["peak_memory_bytes"])' \
    "$WORK/wd_$mib/summary.json" 2>/dev/null || echo 0)
  echo "# $mib MiB token file: peak RSS per rank $((peak[$mib] / 1024)) KiB"
  rm -f "$f"
done
"$PY" - "${peak[64]}" "${peak[1024]}" <<'PYEOF' && ok "peak RSS per rank independent of the file size" || fail "peak RSS grows with the file"
import sys
small, big = int(sys.argv[1]), int(sys.argv[2])
assert small > 0 and big > 0, (small, big)
ratio = big / small
print(f"# peak RSS per rank: {small/2**20:.1f} MiB (64 MiB file), {big/2**20:.1f} MiB (1 GiB file), ratio {ratio:.3f}")
assert abs(ratio - 1) <= 0.05, ratio
# At least twice the peak: a rank that read the file whole would hold more than all of it. (A
# worker linked to a CUDA LibTorch 2.x starts at about 450 MiB with its libraries mapped.)
assert 2**30 >= 2 * big, f"the 1 GiB file is not twice the peak RSS {big}"
PYEOF
no_survivors "mtrain-worker --job $WORK"
finish
