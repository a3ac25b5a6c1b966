// CIFAR-10 in its binary form: data_batch_1..5.bin (Train) and test_batch.bin (Val) in one
// folder, each a run of 3073-byte records — 1 label byte (0–9), then 1024 red, 1024 green and
// 1024 blue pixel bytes of a 32x32 image, row-major. The standard files hold 10000 records each;
// any whole number of records is accepted so small files work in tests. Pixels are kept as bytes
// and normalised per batch with the usual per-channel mean/std.
#include "lib/core/error.hpp"
#include "lib/trainer/data/datasets.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace mtrain::trainer {
namespace {

constexpr int64_t kPixels = 3 * 32 * 32;
constexpr int64_t kRecord = 1 + kPixels;
constexpr float kMean[3] = {0.4914f, 0.4822f, 0.4465f};
constexpr float kStd[3] = {0.2470f, 0.2435f, 0.2616f};

class Cifar10 : public Dataset {
 public:
  Cifar10(std::vector<unsigned char> records, bool flatten)
      : records_(std::move(records)), flatten_(flatten) {}
  int64_t size() const override { return static_cast<int64_t>(records_.size()) / kRecord; }
  Batch batch(const std::vector<int64_t>& indices) const override {
    const auto n = static_cast<int64_t>(indices.size());
    at::Tensor x = at::empty({n, 3, 32, 32}, at::kFloat);
    at::Tensor y = at::empty({n}, at::kLong);
    float* xp = x.data_ptr<float>();
    int64_t* yp = y.data_ptr<int64_t>();
    for (int64_t s = 0; s < n; ++s) {
      const int64_t i = indices[static_cast<size_t>(s)];
      check_index(i, size(), "cifar10");
      const unsigned char* r = records_.data() + i * kRecord;
      yp[s] = r[0];
      for (int64_t k = 0; k < kPixels; ++k) {
        const int64_t c = k / 1024;
        xp[s * kPixels + k] = (static_cast<float>(r[1 + k]) / 255.0f - kMean[c]) / kStd[c];
      }
    }
    if (flatten_) x = x.reshape({n, kPixels});
    return {x, y};
  }

 private:
  std::vector<unsigned char> records_;
  bool flatten_;
};

void append_batch_file(const std::string& path, std::vector<unsigned char>& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UsageError(fmt::format("cannot read CIFAR-10 batch '{}': {}", path, std::strerror(errno)),
                     "data.path must be the folder holding data_batch_1.bin … data_batch_5.bin and "
                     "test_batch.bin (the 'CIFAR-10 binary version' archive, cifar-10-batches-bin)")
        .at("data.path");
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  const auto n = static_cast<int64_t>(bytes.size());
  if (n == 0 || n % kRecord != 0)
    throw UsageError(fmt::format("CIFAR-10 batch '{}' has {} bytes, not a whole number of {}-byte "
                                 "records (1 label byte + {} pixel bytes; a full batch is {} bytes)",
                                 path, n, kRecord, kPixels, 10000 * kRecord),
                     "the file is truncated or not a CIFAR-10 binary batch; download it again")
        .at("data.path");
  for (int64_t r = 0; r < n / kRecord; ++r)
    if (bytes[static_cast<size_t>(r * kRecord)] > 9)
      throw UsageError(fmt::format("CIFAR-10 batch '{}' record {} has label {} (expected 0–9)", path, r,
                                   bytes[static_cast<size_t>(r * kRecord)]),
                       "the file is not a CIFAR-10 binary batch (CIFAR-100 has 2 label bytes)")
          .at("data.path");
  out.insert(out.end(), bytes.begin(), bytes.end());
}

}  // namespace

std::unique_ptr<Dataset> make_cifar10(const DataSpec& d, const ModelSpec& m, Split split) {
  bool flatten = false;
  if (m.name == config::ModelName::Mlp) {
    if (m.input_dim != kPixels)
      throw UsageError(fmt::format("cifar10 images have {} values but model.input_dim is {}", kPixels, m.input_dim),
                       fmt::format("set model.input_dim to {} or use a resnet", kPixels))
          .at("model.input_dim");
    flatten = true;
  } else if (!config::is_resnet(m.name)) {
    throw UsageError(
        fmt::format("cifar10 is an image classification task; model '{}' cannot read it", config::to_string(m.name)),
        "use resnet18, resnet50 or mlp (input_dim 3072)")
        .at("data.name");
  }
  if (m.num_classes < 10)
    throw UsageError(fmt::format("cifar10 has 10 classes but model.num_classes is {}", m.num_classes),
                     "set model.num_classes to 10")
        .at("model.num_classes");
  if (d.path.empty())
    throw UsageError(
        "cifar10 needs data.path: the folder holding data_batch_1.bin … data_batch_5.bin "
        "and test_batch.bin")
        .at("data.path");
  std::vector<unsigned char> records;
  const std::string dir = d.path.back() == '/' ? d.path : d.path + "/";
  if (split == Split::Train) {
    for (int b = 1; b <= 5; ++b) append_batch_file(dir + fmt::format("data_batch_{}.bin", b), records);
  } else {
    append_batch_file(dir + "test_batch.bin", records);
  }
  return std::make_unique<Cifar10>(std::move(records), flatten);
}

}  // namespace mtrain::trainer
