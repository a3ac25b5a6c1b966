#include "lib/trainer/checkpoint/verify.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/crc32c.hpp"
#include "lib/core/untrusted_file.hpp"
#include "lib/trainer/checkpoint/durable_file.hpp"
#include "lib/trainer/checkpoint/manifest.hpp"
#include "lib/trainer/checkpoint/tensor_archive.hpp"
#include "lib/trainer/checkpoint/shard_io.hpp"

namespace mtrain::trainer {

namespace fs = std::filesystem;

namespace {

// Pieces may overlap (replicated strategies save the same range from several ranks); they must
// together cover [0, numel) and stay inside it.
std::string coverage_problem(const std::string& name, const TensorMeta& meta) {
  const int64_t n = numel_of(meta.shape);
  std::vector<std::pair<int64_t, int64_t>> r;
  for (const auto& p : meta.pieces) {
    if (p.offset + p.numel > n) {
      return fmt::format("tensor '{}': a piece in {} spans [{}, {}) beyond its {} elements", name,
                         p.file, p.offset, p.offset + p.numel, n);
    }
    if (p.numel > 0) r.emplace_back(p.offset, p.offset + p.numel);
  }
  std::sort(r.begin(), r.end());
  int64_t covered = 0;
  for (const auto& [b, e] : r) {
    if (b > covered) break;
    covered = std::max(covered, e);
  }
  if (covered < n) {
    return fmt::format("tensor '{}': the pieces cover elements [0, {}) of {}", name, covered, n);
  }
  return "";
}

// The files to check: the files table (format 2), else every file a piece names.
std::map<std::string, FileMeta> files_to_check(const Manifest& m, bool checksummed) {
  std::map<std::string, FileMeta> files = m.files;
  if (!checksummed) {
    for (const auto& [name, meta] : m.tensors) {
      for (const auto& p : meta.pieces) files[p.file].rank = p.rank;
    }
  }
  return files;
}

// A zip record a shard must hold: its key, the bytes it must hold, what it is. A record's size
// must be its piece's numel × dtype size, so a dtype edited in an older manifest (no checksum)
// is caught here.
struct Want {
  std::string key;
  uint64_t bytes;
  std::string what;
};

// file → the records of the manifest's pieces in it.
std::map<std::string, std::vector<Want>> pieces_wanted(const Manifest& m) {
  std::map<std::string, std::vector<Want>> keys;
  for (const auto& [name, meta] : m.tensors) {
    for (const auto& p : meta.pieces) {
      if (!p.key.empty()) {
        keys[p.file].push_back({p.key, static_cast<uint64_t>(p.numel) * dtype_name_bytes(meta.dtype),
                                fmt::format("a piece of '{}' ({} elements of {})", name, p.numel, meta.dtype)});
      }
    }
  }
  return keys;
}

// "" for a regular file (its stat in `st`), else what is there instead. Looks without following
// a link or opening a FIFO (which would block).
std::string not_a_regular_file(const fs::path& path, struct stat& st) {
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return "";
  const int e = errno;
  if (::lstat(path.c_str(), &st) != 0) return fmt::format("the shard file is missing ({})", std::strerror(e));
  std::string what = file_type_name(st.st_mode);
  std::error_code lec;
  if (S_ISLNK(st.st_mode)) what += " to " + fs::read_symlink(path, lec).string();
  return fmt::format("the shard is {}, not a regular file (mtrain writes shards as "
                     "regular files: something else replaced it)", what);
}

// Format 2: the file's size, then (o.checksums) its CRC-32C, against the files table.
void check_size_and_checksum(FileCheck& c, const fs::path& path, const FileMeta& fm, const VerifyOptions& o) {
  c.expected_bytes = fm.bytes;
  c.expected_checksum = fm.checksum;
  if (c.actual_bytes != fm.bytes) {
    c.ok = false;
    c.problem = fmt::format("expected {} bytes, found {} (the shard is damaged: {})", fm.bytes,
                            c.actual_bytes, c.actual_bytes < fm.bytes ? "truncated" : "longer than written");
    return;
  }
  if (!o.checksums) return;
  try {
    const FileDigest d = digest_file(path.string(), o.progress);
    c.actual_checksum = crc32c_text(d.crc32c);
    if (c.actual_checksum != fm.checksum) {
      c.ok = false;
      c.problem = fmt::format("checksum mismatch: expected {}, found {} over {} bytes (the "
                              "shard is damaged)",
                              fm.checksum, c.actual_checksum, d.bytes);
    }
  } catch (const Error& e) {
    c.ok = false;
    c.problem = e.message();
  }
}

// The zip records: each piece's and each extra tensor's record holds the bytes the manifest
// implies; format 1 (no checksums) reads the whole dict instead of a CRC.
void check_records(FileCheck& c, const fs::path& path, const FileMeta& fm, std::vector<Want> wants,
                   bool checksummed, const VerifyOptions& o) {
  try {
    ArchiveReader zip(path.string());
    for (const auto& [en, e] : fm.extras) {
      uint64_t n = static_cast<uint64_t>(dtype_name_bytes(e.dtype));
      for (int64_t d : e.shape) n *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
      wants.push_back({e.key, n, fmt::format("the rank's extra tensor '{}'", en)});
    }
    for (const auto& k : wants) {
      const uint64_t have = zip.record_bytes(k.key);
      if (have != k.bytes) {
        throw UsageError(fmt::format("{}: record data/{} holds {} bytes, but the manifest says it is {} "
                                     "= {} bytes",
                                     path.string(), k.key, have, k.what, k.bytes),
                         "the manifest or the shard was edited or damaged");
      }
    }
    if (!checksummed && o.checksums) read_tensor_dict(path.string());
  } catch (const Error& e) {
    c.ok = false;
    c.problem = e.message();
    const std::string prefix = path.string() + ": ";
    if (c.problem.rfind(prefix, 0) == 0) c.problem = c.problem.substr(prefix.size());
  }
}

FileCheck check_file(const std::string& dir, const std::string& file, const FileMeta& fm, std::vector<Want> wants,
                     bool checksummed, const VerifyOptions& o) {
  FileCheck c;
  c.file = file;
  const fs::path path = fs::path(dir) / file;
  struct stat st {};
  c.problem = not_a_regular_file(path, st);
  if (!c.problem.empty()) {
    c.ok = false;
    return c;
  }
  c.actual_bytes = static_cast<uint64_t>(st.st_size);
  if (checksummed) check_size_and_checksum(c, path, fm, o);
  if (c.ok) check_records(c, path, fm, std::move(wants), checksummed, o);
  return c;
}

}  // namespace

bool VerifyReport::ok() const {
  if ((require_complete && !complete) || !manifest_ok || !coverage_problems.empty()) return false;
  return std::all_of(files.begin(), files.end(), [](const FileCheck& f) { return f.ok; });
}

std::string VerifyReport::problem() const {
  if (require_complete && !complete) {
    return fmt::format("{}: the checkpoint has no COMPLETE marker, so it may be partial",
                       (fs::path(dir) / "COMPLETE").string());
  }
  if (!manifest_ok) return manifest_problem;
  for (const auto& f : files) {
    if (!f.ok) return fmt::format("{}: {}", (fs::path(dir) / f.file).string(), f.problem);
  }
  if (!coverage_problems.empty()) {
    return fmt::format("{}/manifest.json: {}", dir, coverage_problems.front());
  }
  return "";
}

VerifyReport verify_checkpoint(const std::string& dir, const VerifyOptions& o) {
  VerifyReport rep;
  rep.dir = dir;
  rep.complete = fs::exists(fs::path(dir) / "COMPLETE");
  rep.require_complete = o.require_complete;
  Manifest m;
  try {
    m = read_manifest(dir);
    rep.manifest_ok = true;
  } catch (const Error& e) {
    rep.manifest_problem = e.message();
    return rep;
  }
  rep.checksummed = m.format_version >= 2;
  rep.manifest_checksummed = m.checksummed;
  for (const auto& [name, meta] : m.tensors) {
    const std::string p = coverage_problem(name, meta);
    if (!p.empty()) rep.coverage_problems.push_back(p);
  }
  auto wanted = pieces_wanted(m);
  size_t index = 0;
  for (const auto& [file, fm] : files_to_check(m, rep.checksummed)) {
    if (o.select && !o.select(index++)) continue;
    rep.files.push_back(check_file(dir, file, fm, wanted[file], rep.checksummed, o));
  }
  return rep;
}

}  // namespace mtrain::trainer
