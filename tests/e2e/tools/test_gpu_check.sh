#!/usr/bin/env bash
# The build half of the GPU run (scripts/gpu-check --build-only, docs/gpu.md), on this CPU
# machine against the pinned PyTorch 2.x wheel: the lean dependencies come from the files a GPU
# machine without a registry is given (scripts/gpu-deps: Debian .debs, cmake/ninja wheels),
# unpacked and found through CMAKE_PREFIX_PATH instead of the system's, the tree configures with
# CUDA and NCCL on, and the modules that use those dependencies build. (The CUDA worker itself is
# the main tree of scripts/test, built the same way from the system's packages.)
. "$(dirname "$0")/../lib.sh"
PY2=${MTRAIN_PEERS_PYTHON:-}
[ -n "$PY2" ] && "$PY2" -c 'import torch' 2>/dev/null || skip "no PyTorch 2.x (MTRAIN_PEERS_PYTHON='$PY2')"
[ -x /usr/local/cuda/bin/nvcc ] || skip "no CUDA toolkit in /usr/local/cuda"
command -v apt-get >/dev/null || skip "no apt-get to download the .deb files with"
deps=$(timeout 300 "$MTRAIN_SOURCE_DIR/scripts/gpu-deps" "$WORK/deps" 2>"$WORK/deps.log") \
  || { cat "$WORK/deps.log"; skip "scripts/gpu-deps could not download (no registry reachable?)"; }
ok "scripts/gpu-deps: $(tail -1 "$WORK/deps.log")"
GPU_DEPS=$deps GPU_FORCE_DEPS=1 GPU_TARGETS="mtrain_core_yaml" BUILD="$WORK/b" \
  MTRAIN_PYTHON="$PY2" timeout -k 5 600 "$MTRAIN_SOURCE_DIR/scripts/gpu-check" --build-only >"$WORK/out" 2>&1
rc=$?
expect_rc 0 "scripts/gpu-check --build-only"
expect_in "$WORK/out" "lean dependencies from $deps"
grep -q "yaml-cpp_DIR:PATH=$WORK/b/deps/" "$WORK/b/CMakeCache.txt" && ok "yaml-cpp found in the unpacked .debs" \
  || { fail "yaml-cpp not from the carried files: $(grep yaml-cpp_DIR "$WORK/b/CMakeCache.txt")"; }
grep -q "^MTRAIN_WITH_CUDA:BOOL=ON" "$WORK/b/CMakeCache.txt" && ok "configured with CUDA and NCCL" || fail "MTRAIN_WITH_CUDA is not ON"
grep -q "^MTRAIN_TORCH:STRING=python" "$WORK/b/CMakeCache.txt" && ok "against the Python's PyTorch" || fail "MTRAIN_TORCH"
sed 's/^/    | /' "$WORK/out" | tail -5
finish
