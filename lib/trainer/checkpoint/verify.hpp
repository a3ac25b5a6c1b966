#pragma once
// Checking a checkpoint folder without loading it: the marker, the manifest, every shard file's
// size and CRC-32C against the manifest, each piece's zip record, and that the pieces of every
// logical tensor cover all of its elements.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/trainer/checkpoint/manifest.hpp"

namespace mtrain::trainer {

struct FileCheck {
  std::string file;  // relative to the checkpoint folder
  bool ok = true;
  uint64_t expected_bytes = 0, actual_bytes = 0;
  std::string expected_checksum, actual_checksum;
  std::string problem;  // "" when ok
};

struct VerifyReport {
  std::string dir;
  bool complete = false;      // COMPLETE marker present
  bool require_complete = true;
  bool manifest_ok = false;
  bool checksummed = false;   // format ≥ 2 (format 1 has no checksums: files only exist-checked)
  bool manifest_checksummed = false;  // the manifest's own checksum matched (false: none recorded)
  std::string manifest_problem;
  std::vector<FileCheck> files;
  std::vector<std::string> coverage_problems;
  bool ok() const;
  // One paragraph naming the first problem: file, expected vs actual. "" when ok.
  std::string problem() const;
};

struct VerifyOptions {
  bool require_complete = true;
  // Which shard files to check (index in the manifest's file order → check it?); null = all.
  std::function<bool(size_t)> select;
  bool checksums = true;  // false: sizes only (cheap)
  std::function<void()> progress;  // during long reads (heartbeat)
};

VerifyReport verify_checkpoint(const std::string& dir, const VerifyOptions& o = {});

}  // namespace mtrain::trainer
