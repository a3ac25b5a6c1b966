#pragma once
// Hand-built hostile files for the reader tests of issue 29: torch.save-style zips (records under
// "archive/", with per-record method and declared-size overrides: tests/zip_bytes.hpp) and protocol-2
// pickles of state dicts, as tests/fuzz/seed_corpus.py builds its seeds. No Python needed.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "zip_bytes.hpp"

namespace mtrain::trainer::testing {

using mtrain::testing::append_le;

struct ZipEntry {
  std::string name;
  std::string data;
  uint16_t method = 0;
  int64_t declared_size = -1;  // the uncompressed size written (-1: data's size)
};

inline std::string zip_of(const std::vector<ZipEntry>& entries, const std::string& prefix = "archive/",
                          uint64_t align = 0) {
  std::vector<mtrain::testing::ZipRecord> records;
  for (const auto& e : entries) records.push_back({prefix + e.name, e.data, e.method, e.declared_size});
  return mtrain::testing::zip_bytes(records, align);
}

// Pickle pieces (protocol 2 opcodes, as torch.save writes them).
inline std::string pk_str(const std::string& s) {
  std::string o;
  if (s.size() < 256) {
    o = "\x8c";
    o.push_back(static_cast<char>(s.size()));
  } else {
    o = "X";
    append_le(o, s.size(), 4);
  }
  return o + s;
}
inline std::string pk_int(int64_t v) {
  std::string o;
  if (v >= 0 && v < 256) {
    o = "K";
    o.push_back(static_cast<char>(v));
  } else {
    o = std::string("\x8a\x08", 2);  // LONG1, 8 bytes
    append_le(o, static_cast<uint64_t>(v), 8);
  }
  return o;
}
inline std::string pk_tuple(const std::vector<std::string>& items) {
  std::string o = "(";
  for (const auto& i : items) o += i;
  return o + "t";
}
inline std::string pk_tensor(const std::string& key, int64_t numel, const std::vector<int64_t>& shape,
                             std::vector<int64_t> stride = {}, const std::string& storage = "FloatStorage",
                             int64_t offset = 0) {
  if (stride.empty()) {
    int64_t acc = 1;
    stride.assign(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 0;) {
      stride[d] = acc;
      acc *= shape[d];
    }
  }
  std::vector<std::string> dims, strides;
  for (auto d : shape) dims.push_back(pk_int(d));
  for (auto d : stride) strides.push_back(pk_int(d));
  const std::string pid = pk_tuple({pk_str("storage"), "ctorch\n" + storage + "\n", pk_str(key), pk_str("cpu"), pk_int(numel)});
  return "ctorch._utils\n_rebuild_tensor_v2\n" +
         pk_tuple({pid + "Q", pk_int(offset), pk_tuple(dims), pk_tuple(strides), "\x89",
                   "ccollections\nOrderedDict\n)R"}) + "R";
}
inline std::string pk_dict(const std::vector<std::pair<std::string, std::string>>& kv, bool ordered = false) {
  std::string o = ordered ? "ccollections\nOrderedDict\n)R(" : "}(";
  for (const auto& [k, v] : kv) o += pk_str(k) + v;
  return o + "u";
}
inline std::string pickle_of(const std::string& body) { return std::string("\x80\x02", 2) + body + "."; }

// The data.pkl torch.save (PyTorch 2, protocol 2) writes for {"t0": t, "t1": t, …} of n tensors
// of `numel` floats, storage i holding tensor i, opcode for opcode as pickletools lists it: every
// value memoized (BINPUT, then LONG_BINPUT from entry 256), the globals and the strings 'storage'
// and 'cpu' taken from the memo after their first use, SETITEMS in batches of 1000 (n ≥ 2).
// Byte for byte what torch 2.x on CPython 3.11 wrote for n = 10^5, numel = 4.
inline std::string torch_save_pickle(int64_t n, int64_t numel) {
  std::string o("\x80\x02}", 3);
  uint64_t memo = 0;
  auto put = [&] {
    if (memo < 256) {
      o += 'q';
      o.push_back(static_cast<char>(memo));
    } else {
      o += 'r';
      append_le(o, memo, 4);
    }
    ++memo;
  };
  auto str = [&](const std::string& s) {
    o += 'X';
    append_le(o, s.size(), 4);
    o += s;
    put();
  };
  auto get = [&](uint64_t k) { o += std::string("h", 1) + static_cast<char>(k); };  // k < 256
  auto global = [&](const std::string& text, uint64_t k, bool first) {
    if (first) {
      o += "c" + text;
      put();
    } else {
      get(k);
    }
  };
  put();
  o += '(';
  for (int64_t i = 0; i < n; ++i) {
    const bool first = i == 0;
    if (i > 0 && i % 1000 == 0) o += "u(";
    str("t" + std::to_string(i));
    global("torch._utils\n_rebuild_tensor_v2\n", 2, first);
    o += "((";
    first ? str("storage") : get(3);
    global("torch\nFloatStorage\n", 4, first);
    str(std::to_string(i));
    first ? str("cpu") : get(6);
    o += pk_int(numel) + "t";
    put();
    o += "Q" + pk_int(0) + pk_int(numel) + "\x85";
    put();
    o += pk_int(1) + "\x85";
    put();
    o += "\x89";
    global("collections\nOrderedDict\n", 10, first);
    o += ")R";
    put();
    o += "t";
    put();
    o += "R";
    put();
  }
  // CPython's pickler closes a batch of exactly 1000 with one more (empty) MARK … SETITEMS.
  return o + (n % 1000 == 0 ? "u(u." : "u.");
}

template <class T>
std::string raw_bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

}  // namespace mtrain::trainer::testing
