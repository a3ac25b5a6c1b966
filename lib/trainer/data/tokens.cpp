// Pre-tokenized corpora (nanoGPT's raw uint16 .bin, llm.c's headed .bin; layouts in
// lib/core/token_file.hpp), memory-mapped and never read whole: a rank's memory does not grow
// with the file. Samples are cut like the text dataset's: non-overlapping windows of
// block_size+1 tokens sharing their boundary token — window i starts at token i·T, input =
// tokens [iT, iT+T), target = [iT+1, iT+T+1). Val is data.val_path when set, else the tail
// data.val_fraction of data.path's tokens (windows never straddle the split).
//
// Memory: the mapping is read-only and MAP_SHARED, so its pages are the page cache's, shared by
// every rank of the node and never copied. A page a rank touches still counts in its resident
// set while mapped, so after a window is copied into the batch its pages are unmapped again
// (madvise MADV_DONTNEED — they stay cached); over an epoch the RSS stays flat instead of
// climbing to the file's size. The unmapped range is widened to 64 KiB because a read fault also
// maps the neighbouring cached pages of that aligned block (the kernel's default fault-around).
//
// Token ids are checked against model.vocab_size as each window is read — O(batch), no scan of
// the whole file at start (which every rank would pay for a corpus of many GiB) — and an id out of
// range stops the job with the file, token position and byte offset.
#include "lib/core/error.hpp"
#include "lib/core/token_file.hpp"
#include "lib/core/untrusted_file.hpp"
#include "lib/trainer/data/mapped_file_faults.hpp"
#include "lib/trainer/data/datasets.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace mtrain::trainer {
namespace {

constexpr uint64_t kReleaseAlign = 64 * 1024;

// A whole file mapped read-only and shared.
class FileMapping {
 public:
  FileMapping(const std::string& path, uint64_t expected_size, const std::string& setting,
              int advice) {
    std::string why;
    const UntrustedFile f = open_untrusted(path, &why);  // never blocks on a FIFO
    if (f.fd() < 0) throw UsageError(fmt::format("token file '{}' {}", path, why)).at(setting);
    const int fd = f.fd();
    if (f.size() != expected_size) {
      throw RuntimeFailure(fmt::format("token file '{}' changed size while it was opened (now {} bytes, "
                                       "{} when its header was read)",
                                       path, f.size(), expected_size),
                           "do not write the token file while a job reads it")
          .at(setting);
    }
    void* p = ::mmap(nullptr, expected_size, PROT_READ, MAP_SHARED, fd, 0);
    const int map_errno = errno;  // f closes at scope end: the mapping keeps the file referenced
    if (p == MAP_FAILED)
      throw RuntimeFailure(fmt::format("cannot memory-map token file '{}' ({} bytes): {}", path, expected_size,
                                       std::strerror(map_errno)),
                           "the file must be on a filesystem that supports mmap (not a pipe)")
          .at(setting);
    data_ = static_cast<const unsigned char*>(p);
    size_ = expected_size;
    ::madvise(p, size_, advice);  // a hint only: its failure changes nothing that matters
    // A truncation while mapped raises SIGBUS at the next read: report it naming this file.
    fault_slot_ = register_mapped_file(p, size_, path, setting);
  }
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;
  ~FileMapping() {
    forget_mapped_file(fault_slot_);
    ::munmap(const_cast<unsigned char*>(data_), size_);
  }

  const unsigned char* data() const { return data_; }

  // Drops this process's mapping of the pages over [offset, offset+len), widened to whole
  // kReleaseAlign blocks. The page cache keeps them; a later read faults them back in. Safe while
  // another thread reads the same pages: a shared read-only file mapping re-reads the file.
  void release(uint64_t offset, uint64_t len) const {
    const uint64_t begin = offset / kReleaseAlign * kReleaseAlign;
    const uint64_t end = std::min(size_, (offset + len + kReleaseAlign - 1) / kReleaseAlign * kReleaseAlign);
    ::madvise(const_cast<unsigned char*>(data_) + begin, end - begin, MADV_DONTNEED);
  }

 private:
  const unsigned char* data_ = nullptr;
  uint64_t size_ = 0;
  int fault_slot_ = -1;
};

// Tokens [first, first + count) of one mapped file, cut into windows.
struct TokenRange {
  std::shared_ptr<const FileMapping> map;
  std::string path;
  std::string setting;  // data.path or data.val_path
  TokenFileLayout layout;
  int64_t first = 0;
  int64_t count = 0;
};

// Token ids are copied out of the mapping as they lie in the file.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "token files are little-endian and are read in place");

class TokenWindows : public Dataset {
 public:
  TokenWindows(TokenRange r, int64_t block, int64_t vocab)
      : r_(std::move(r)), block_(block), vocab_(vocab) {}
  int64_t size() const override { return r_.count > 0 ? (r_.count - 1) / block_ : 0; }
  Batch batch(const std::vector<int64_t>& indices) const override {
    const int tb = r_.layout.token_bytes;
    return window_batch(indices, block_, [&](int64_t i, int64_t* w) {
      check_index(i, size(), "tokens");
      const int64_t start = r_.first + i * block_;  // token position in the file
      const auto offset = static_cast<uint64_t>(r_.layout.header_bytes + start * tb);
      const unsigned char* src = r_.map->data() + offset;
      for (int64_t t = 0; t <= block_; ++t) {
        if (tb == 2) {
          uint16_t v;
          std::memcpy(&v, src + t * 2, 2);
          w[t] = v;
        } else {
          uint32_t v;
          std::memcpy(&v, src + t * 4, 4);
          w[t] = v;
        }
        if (w[t] >= vocab_) throw out_of_vocab(w[t], start + t);
      }
      r_.map->release(offset, static_cast<uint64_t>((block_ + 1) * tb));
    });
  }

 private:
  Error out_of_vocab(int64_t id, int64_t position) const {
    return Error(fmt::format("token file '{}' ({}) has token id {} at position {} (byte offset "
                             "{}), but model.vocab_size is {}: ids must be below it",
                             r_.path, r_.layout.describe(), id, position,
                             r_.layout.header_bytes + position * r_.layout.token_bytes, vocab_),
                 "set model.vocab_size above the largest id in the file (the tokenizer's "
                 "vocabulary: 50257 for GPT-2, which nanoGPT rounds up to 50304), or check that "
                 "the file was written by the tokenizer you meant",
                 kExitFailure)
        .at(r_.setting);
  }

  TokenRange r_;
  int64_t block_;
  int64_t vocab_;
};

TokenRange map_tokens(const std::string& path, const std::string& setting, int advice) {
  TokenRange r;
  r.path = path;
  r.setting = setting;
  r.layout = read_token_file_layout(path, setting);
  r.count = r.layout.count;
  const auto bytes = static_cast<uint64_t>(r.layout.header_bytes + r.count * r.layout.token_bytes);
  if (bytes > 0) r.map = std::make_shared<const FileMapping>(path, bytes, setting, advice);
  return r;
}

void require_window(const TokenRange& r, int64_t tokens, int64_t need, const std::string& what,
                    const std::string& hint, const std::string& setting) {
  if (tokens >= need) return;
  throw UsageError(fmt::format("token file '{}' ({}) has {} tokens; {} ({} tokens) is shorter than one "
                               "window of block_size+1 = {} tokens",
                               r.path, r.layout.describe(), r.count, what, tokens, need),
                   hint)
      .at(setting);
}

}  // namespace

std::unique_ptr<Dataset> make_tokens(const DataSpec& d, const ModelSpec& m, Split split) {
  require_language_model(m, "tokens");
  const int64_t need = m.block_size + 1;
  // Windows are read in the sampler's order: random when shuffled, else in order.
  const int advice = split == Split::Train && d.shuffle ? MADV_RANDOM : MADV_NORMAL;
  if (!d.val_path.empty()) {
    if (split == Split::Train) {
      TokenRange r = map_tokens(d.path, "data.path", advice);
      require_window(r, r.count, need, "all of it",
                     "use a longer file or a smaller model.block_size", "data.path");
      return std::make_unique<TokenWindows>(std::move(r), m.block_size, m.vocab_size);
    }
    TokenRange r = map_tokens(d.val_path, "data.val_path", advice);
    require_window(r, r.count, need, "all of it",
                   "use a longer validation file or a smaller model.block_size", "data.val_path");
    return std::make_unique<TokenWindows>(std::move(r), m.block_size, m.vocab_size);
  }
  TokenRange r = map_tokens(d.path, "data.path", advice);
  const int64_t total = r.count;
  const auto val_len = static_cast<int64_t>(std::floor(static_cast<double>(total) * d.val_fraction));
  const int64_t train_len = total - val_len;
  require_window(r, train_len, need, "its training part",
                 "use a longer file, a smaller model.block_size or a smaller data.val_fraction",
                 "data.path");
  if (split == Split::Train) {
    r.count = train_len;
    return std::make_unique<TokenWindows>(std::move(r), m.block_size, m.vocab_size);
  }
  if (val_len > 0)
    require_window(r, val_len, need,
                   fmt::format("its validation tail (val_fraction {})", d.val_fraction),
                   "raise data.val_fraction, set it to 0 (no validation), or give data.val_path",
                   "data.val_fraction");
  r.first = train_len;
  r.count = val_len;
  return std::make_unique<TokenWindows>(std::move(r), m.block_size, m.vocab_size);
}

}  // namespace mtrain::trainer
