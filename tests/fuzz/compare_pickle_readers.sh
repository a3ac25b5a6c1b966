#!/usr/bin/env bash
# Old vs new state-dict pickle reader (issue 29): builds the reader of git revision REV and the
# working tree's into two small drivers, runs both over every FILE (a torch.save zip: its data.pkl;
# anything else: the bytes as a pickle) and says how many inputs the old reader loads and whether
# the new one loads each of them identically (tensors, shapes, strides, storages, skipped keys).
# A change of a refusal's message is counted, not a failure. Exits 1 on a difference.
#
#   tests/fuzz/compare_pickle_readers.sh BUILD_DIR REV FILE...
#   e.g. tests/fuzz/compare_pickle_readers.sh build HEAD~1 tests/fuzz/corpus/torch_zip/* ...
# BUILD_DIR: a configured normal build with lib/core built (its libmtrain_core.a and include/).
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,10p "$0" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd); rev=$2; shift 2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/old/lib/trainer/checkpoint"
# A revision from before includes were paths from the repository root names headers "mtrain/...":
# a link gives it that root.
ln -s "$work/old/lib" "$work/old/mtrain" && ln -s "$here/lib/core" "$work/old/lib/core"
for f in $(git -C "$here" ls-tree --name-only "$rev" lib/trainer/checkpoint/ | grep -E '/(unpickler|pickle_objects|state_dict_pickle|mapped_array)\.(hpp|cpp)$'); do
  git -C "$here" show "$rev:$f" >"$work/old/lib/trainer/checkpoint/$(basename "$f")"
done
cat >"$work/driver.cpp" <<'CPP'
#include <fstream>
#include <iostream>
#include <sstream>
#include "lib/core/error.hpp"
#include "lib/core/zip_reader.hpp"
#include "lib/trainer/checkpoint/state_dict_pickle.hpp"
int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string bytes = ss.str();
    std::ostringstream out;  // one line per input: names and messages may hold newlines and tabs
    try {
      std::string pkl = bytes;
      if (bytes.compare(0, 4, "PK\x03\x04") == 0) pkl = mtrain::ZipReader("x.pt", bytes).read_all("data.pkl", bytes.size());
      const auto sd = mtrain::trainer::parse_state_dict_pickle(pkl, "x.pt");
      out << "OK prefix=" << sd.prefix;
      for (const auto& t : sd.tensors) {
        out << " [" << t.name << ' ' << t.storage_type << ' ' << t.storage_key << ' ' << t.storage_offset << ' ' << t.storage_numel << " (";
        for (auto d : t.shape) out << d << ',';
        out << ")(";
        for (auto d : t.stride) out << d << ',';
        out << ")]";
      }
      for (const auto& s : sd.skipped) out << " skip:" << s;
    } catch (const std::exception& e) {
      out << "ERR " << e.what();
    }
    std::string line = out.str();
    for (char& c : line)
      if (c == '\n' || c == '\t') c = ' ';
    std::cout << argv[i] << '\t' << line << '\n';
  }
}
CPP
for v in old new; do
  src=$here/lib/trainer/checkpoint inc=()
  [ $v = old ] && src=$work/old/lib/trainer/checkpoint inc=(-I"$work/old")
  nice g++ -std=gnu++17 -O1 -DFMT_SHARED "${inc[@]}" -I"$build/include/fuzz_trainer" -I"$build/include/core" \
    -I"$build/include/core_generated" "$work/driver.cpp" "$src/unpickler.cpp" "$src/pickle_objects.cpp" \
    "$src/state_dict_pickle.cpp" "$build/lib/core/libmtrain_core.a" -lfmt -lz -o "$work/read_$v"
  printf '%s\0' "$@" | xargs -0 "$work/read_$v" >"$work/$v.txt"
done
python3 - "$work/old.txt" "$work/new.txt" <<'PY'
import sys
def rows(p):
    return dict(l.split(b'\t', 1) for l in open(p, 'rb').read().split(b'\n') if b'\t' in l)
old, new = rows(sys.argv[1]), rows(sys.argv[2])
loads = [k for k in old if old[k].startswith(b'OK')]
diff = [k for k in loads if new.get(k) != old[k]]
refused = [k for k in old if k not in loads]
print(f"{len(old)} inputs; the old reader loads {len(loads)}, the new one {len(loads) - len(diff)} of them identically; "
      f"{sum(1 for k in refused if new.get(k) != old[k])} of {len(refused)} refusals changed "
      f"({sum(1 for k in refused if new.get(k, b'').startswith(b'OK'))} now load)")
for k in diff[:20]:
    print("DIFFERS:", k.decode(errors='replace'), old[k][:160], new.get(k, b'')[:160])
sys.exit(1 if diff else 0)
PY
