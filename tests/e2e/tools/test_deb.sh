#!/usr/bin/env bash
# `cpack -G DEB` builds mtrain_<version>_<arch>.deb: its Depends names the runtime libraries of
# both binaries (LibTorch, OpenBLAS, the C++ runtime of the worker, glibc; yaml-cpp, fmt and zlib
# are linked statically: cmake/static_deps.cmake), and unpacked into a
# throwaway root it has the /usr layout (the worker where mtrain finds it) and runs from there.
# The package is the Debian LibTorch 1.13 line's (build-1.13 beside a 2.x tree): a worker linked
# to a PyTorch wheel has no Debian package to depend on.
. "$(dirname "$0")/../lib.sh"
BIN113=${MTRAIN_113_BIN_DIR:-$MTRAIN_BIN_DIR}
BUILD=$(dirname "$BIN113")
[ -x "$BIN113/mtrain-worker" ] || skip "no 1.13 line mtrain-worker in $BIN113 (scripts/test builds build-1.13)"
command -v dpkg-deb >/dev/null && command -v dpkg-shlibdeps >/dev/null || skip "dpkg-deb/dpkg-shlibdeps missing (apt-get install dpkg-dev)"
timeout -k 5 240 cmake --build "$BUILD" --target mtrain_share >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; fail "build mtrain_share"; finish; }
(cd "$BUILD" && timeout -k 5 280 cpack -G DEB -B "$WORK/pkg" >"$WORK/cpack.log" 2>&1)
rc=$?; expect_rc 0 "cpack -G DEB"
deb=$(ls "$WORK"/pkg/mtrain_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] && ok "built $(basename "$deb")" || { fail "no mtrain_*.deb"; cat "$WORK/cpack.log"; finish; }

dpkg-deb --info "$deb" >"$WORK/info" 2>&1
depends=$(sed -n 's/^ Depends: //p' "$WORK/info")
echo "    Depends: $depends"
for p in libtorch1.13 libopenblas0 libstdc++6 libc6; do  # Boost.Filesystem is linked away (--as-needed)
  case "$depends" in *"$p"*) ok "Depends names $p" ;; *) fail "Depends lacks $p" ;; esac
done
for p in libyaml-cpp libfmt zlib1g; do  # static in both binaries: the package must not ask for them
  case "$depends" in *"$p"*) fail "Depends names $p, which cmake/static_deps.cmake links statically" ;; *) ok "Depends has no $p" ;; esac
done

# apt resolves every dependency from this machine's package lists (a simulation: nothing installed).
if command -v apt-get >/dev/null; then
  timeout 120 apt-get install -s "$deb" >"$WORK/apt" 2>&1; rc=$?
  expect_rc 0 "apt-get install -s ./$(basename "$deb") resolves its dependencies"
  expect_in "$WORK/apt" "Inst mtrain"
fi

root=$WORK/root
dpkg -x "$deb" "$root"
for f in usr/bin/mtrain usr/libexec/mtrain/mtrain-worker usr/libexec/mtrain/mtrain-worker.facts.json \
         usr/libexec/mtrain/mtrain-worker.operators usr/share/man/man1/mtrain.1 \
         usr/share/bash-completion/completions/mtrain usr/share/mtrain/examples/zero3.yaml \
         usr/share/mtrain/templates/slurm/task-per-gpu.sbatch usr/share/doc/mtrain/README.md \
         usr/share/mtrain/python/mtrain_export/__main__.py usr/share/mtrain/python/mtrain_export/package.py; do
  [ -e "$root/$f" ] && ok "package has /$f" || fail "package lacks /$f"
done
timeout -k 5 60 "$root/usr/bin/mtrain" --version >"$WORK/version" 2>&1
expect_in "$WORK/version" "LibTorch 1."
expect_in "$WORK/version" "mtrain-worker $root/usr/libexec/mtrain/mtrain-worker)"
# The installed mtrain finds its exporter in /usr/share/mtrain/python (the exporter's own help).
if command -v python3 >/dev/null; then
  timeout -k 5 60 "$root/usr/bin/mtrain" export --python python3 --help >"$WORK/export-help" 2>&1
  expect_in "$WORK/export-help" "usage: mtrain export"
fi
finish
