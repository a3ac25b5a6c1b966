#!/usr/bin/env bash
# `mtrain` maps no C++ shared object (issue 30 item 8: --help and --version under 3 ms). Each one
# costs page faults and relocations at every start; libyaml-cpp.so or libfmt.so alone would load
# libstdc++.so again. The C++ runtime, fmt, yaml-cpp and zlib are linked statically
# (cmake/static_deps.cmake, apps/mtrain/CMakeLists.txt); glibc stays shared for NSS/getaddrinfo.
. "$(dirname "$0")/../lib.sh"
command -v readelf >/dev/null || skip "no readelf (apt-get install binutils)"

# needed BINARY: its DT_NEEDED entries, one a line.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
# not_glibc: the entries that are not parts of glibc (libc, libm and the old split-off libraries).
not_glibc() { grep -vE '^(libc|libm|libpthread|libdl|librt|libutil|ld-linux-x86-64|ld-linux-aarch64)\.so\.[0-9]+$'; }

needed "$MTRAIN" >"$WORK/needed"
[ -s "$WORK/needed" ] && ok "mtrain is dynamically linked ($(tr '\n' ' ' <"$WORK/needed"))" \
  || fail "readelf -d $MTRAIN lists no NEEDED entry (glibc must stay shared: NSS, getaddrinfo)"
grep -qx 'libc.so.6' "$WORK/needed" && ok "libc.so.6 is shared" || fail "mtrain does not link libc.so.6 dynamically"
extra=$(not_glibc <"$WORK/needed" | tr '\n' ' ')
[ -z "$extra" ] && ok "mtrain needs only glibc" \
  || fail "mtrain needs $extra- each shared object slows every start (--help must stay under 3 ms); link it statically in cmake/static_deps.cmake, or see why the linker took the .so"

# The check itself sees a C++ runtime where there is one: the worker links libstdc++ through LibTorch.
WORKER=$(dirname "$MTRAIN")/mtrain-worker
if [ -x "$WORKER" ]; then
  needed "$WORKER" | not_glibc | grep -q '^libstdc++' && ok "the check finds libstdc++ in mtrain-worker" \
    || fail "the NEEDED check misses libstdc++ in mtrain-worker: readelf output changed?"
fi

run_mtrain "$WORK/version.out" --version
expect_rc 0 "mtrain --version with the static C++ runtime"
finish
