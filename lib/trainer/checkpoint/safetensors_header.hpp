#pragma once
// The JSON header of a safetensors file, parsed as a stream (torch-free, so that the fuzz build
// links it without LibTorch). Why not a DOM: a downloaded header is untrusted and may be 100 MB.
// nlohmann::ordered_json inserts by linear search (a 200,000-entry header took 58 s) and a DOM
// of 100 MB of '[' took 3.9 GB. The SAX handler here keeps only what the format allows — an
// object of tensors {dtype, shape, data_offsets} and one "__metadata__" object of strings, at
// most 3 levels deep, at most 64 dimensions per shape — and refuses anything else at the first
// byte that breaks it: time is linear in the header, memory is the entries themselves.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mtrain::trainer {

struct SafetensorsHeaderEntry {
  std::string name;
  std::string dtype;          // as written: "F32", "BF16", …
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // in the byte buffer after the header
};

struct SafetensorsHeader {
  std::vector<SafetensorsHeaderEntry> tensors;  // in header order
  std::map<std::string, std::string> metadata;
};

// Element size of a safetensors dtype name, 0 when mtrain does not read it.
uint64_t safetensors_item_size(const std::string& dtype);

// Parses and checks the header against `data_bytes`, the bytes after it: every entry has a known
// dtype, shape × item size equal to its byte range, offsets inside the data; names are unique;
// the ranges cover the data exactly (no overlap, hole or trailing bytes). Throws mtrain::Error
// (exit 2) "<path>: not a valid safetensors file: <what>" at the first problem.
SafetensorsHeader parse_safetensors_header(const std::string& text, uint64_t data_bytes,
                                           const std::string& path);

}  // namespace mtrain::trainer
