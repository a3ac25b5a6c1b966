// Byte-level text: every byte is a token (vocab 256). The file is split by bytes — Train is the
// head, Val the tail val_fraction — and each split is cut into non-overlapping windows of
// block_size+1 bytes that share their boundary byte: window i starts at byte i·T, its input is
// bytes [iT, iT+T) and its target bytes [iT+1, iT+T+1). One epoch predicts every byte once.
#include "lib/core/error.hpp"
#include "lib/trainer/data/datasets.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace mtrain::trainer {
namespace {

class TextWindows : public Dataset {
 public:
  TextWindows(std::string bytes, int64_t block) : bytes_(std::move(bytes)), block_(block) {}
  int64_t size() const override {
    return bytes_.size() > 0 ? static_cast<int64_t>(bytes_.size() - 1) / block_ : 0;
  }
  Batch batch(const std::vector<int64_t>& indices) const override {
    const auto* b = reinterpret_cast<const unsigned char*>(bytes_.data());
    return window_batch(indices, block_, [&](int64_t i, int64_t* w) {
      check_index(i, size(), "text");
      for (int64_t t = 0; t <= block_; ++t) w[t] = b[i * block_ + t];
    });
  }

 private:
  std::string bytes_;
  int64_t block_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UsageError(fmt::format("cannot read text file '{}': {}", path, std::strerror(errno)),
                     "check data.path (any file works: its bytes are the tokens), or leave it empty "
                     "for the embedded corpus")
        .at("data.path");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::unique_ptr<Dataset> make_text(const DataSpec& d, const ModelSpec& m, Split split) {
  require_language_model(m, "text");
  if (m.vocab_size < 256)
    throw UsageError(fmt::format("text data is byte-level (256 token values) but model.vocab_size is {}", m.vocab_size),
                     "set model.vocab_size to 256 or more")
        .at("model.vocab_size");
  const std::string source = d.path.empty() ? "the embedded corpus" : fmt::format("'{}'", d.path);
  std::string all = d.path.empty() ? embedded_corpus() : read_file(d.path);
  const auto total = static_cast<int64_t>(all.size());
  const auto val_len = static_cast<int64_t>(std::floor(static_cast<double>(total) * d.val_fraction));
  const int64_t train_len = total - val_len;
  const int64_t need = m.block_size + 1;
  if (train_len < need)
    throw UsageError(fmt::format("text {} has {} bytes; its training part ({} bytes) is shorter than "
                                 "one window of block_size+1 = {} bytes",
                                 source, total, train_len, need),
                     "use a longer file, a smaller model.block_size or a smaller data.val_fraction")
        .at("data.path");
  if (split == Split::Train) {
    all.resize(static_cast<size_t>(train_len));
    return std::make_unique<TextWindows>(std::move(all), m.block_size);
  }
  if (val_len > 0 && val_len < need)
    throw UsageError(fmt::format("text {} has {} bytes; its validation tail (val_fraction {} → {} bytes) "
                                 "is shorter than one window of block_size+1 = {} bytes",
                                 source, total, d.val_fraction, val_len, need),
                     "raise data.val_fraction, set it to 0 (no validation), or use a longer file")
        .at("data.val_fraction");
  return std::make_unique<TextWindows>(all.substr(static_cast<size_t>(train_len)), m.block_size);
}

}  // namespace mtrain::trainer
