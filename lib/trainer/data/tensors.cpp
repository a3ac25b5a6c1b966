// tensors: a file written by Python's torch.save({"input": X, "target": Y}, PATH) (the default
// zip format); sample i = (X[i], Y[i]), whatever X's dtype and shape (images, features, token
// ids). Read with mtrain's checked zip and pickle readers (no code runs; a dict, plain or ordered,
// with "input" and "target"); numpy arrays and the legacy (non-zip) format get a paragraph saying
// what to write instead. A (X, Y) tuple or list is accepted as well. The whole file is read into memory
// (every rank holds the dataset; the sampler decides who reads which rows).
#include "lib/core/error.hpp"
#include "lib/core/untrusted_file.hpp"
#include "lib/trainer/data/datasets.hpp"
#include "lib/trainer/model/models.hpp"

#include "lib/trainer/checkpoint/state_dict_pickle.hpp"
#include "lib/trainer/checkpoint/tensor_archive.hpp"
#include "lib/trainer/checkpoint/weights_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace mtrain::trainer {
namespace {

constexpr const char* kWrite =
    "write it with torch.save({\"input\": X, \"target\": Y}, PATH): a dict (plain or "
    "collections.OrderedDict; not a TensorDataset) of two torch tensors (not numpy arrays) with the same "
    "number of rows, in torch.save's default zip format";

class RowTensors : public Dataset {
 public:
  RowTensors(at::Tensor x, at::Tensor y) : x_(std::move(x)), y_(std::move(y)) {}
  int64_t size() const override { return x_.size(0); }
  Batch batch(const std::vector<int64_t>& indices) const override {
    for (int64_t i : indices) check_index(i, size(), "tensors");
    const at::Tensor idx = at::tensor(indices, at::kLong);
    return {x_.index_select(0, idx), y_.index_select(0, idx)};
  }

 private:
  at::Tensor x_, y_;
};

// One tensor of the file, checked against its record before a byte is read.
at::Tensor load_one(ArchiveReader& zip, const PickledTensor& t, const std::string& path,
                    const char* what) {
  const std::string problem = pickled_tensor_problem(t, zip.record_bytes(t.storage_key));
  if (!problem.empty()) {
    throw UsageError(fmt::format("the tensors file '{}': {} does not fit its data: {}", path, what, problem),
                     fmt::format("the file is damaged or was edited; {}", kWrite));
  }
  return read_pickled_tensor(zip, t, pickled_scalar_type(t)).view(t.shape);
}

// The (input, target) pair stored in `path`; `key` is the setting that named it. Read with the
// same checked readers as model.init's torch.save files (core/zip_reader.hpp, state_dict_pickle.hpp):
// LibTorch's unpickler recursed once per nesting level (10^6 nested tuples: SIGSEGV), allocated
// any storage size the pickle declared, and read a storage larger than its record past its end.
std::pair<at::Tensor, at::Tensor> load_tensor_pair(const std::string& path, const char* key) {
  try {
    std::string why;
    {
      UntrustedFile f = open_untrusted(path, &why);
      if (f.fd() < 0)
        throw UsageError(fmt::format("the tensors file '{}' {}", path, why), fmt::format("check {}; {}", key, kWrite));
      unsigned char magic[4] = {0, 0, 0, 0};
      if (f.size() >= 4 && f.pread_exact(magic, 4, 0) && magic[0] == 0x80)
        throw UsageError(fmt::format("the tensors file '{}' is in torch.save's legacy (pre-1.6, non-zip) format", path),
                         kWrite);
    }
    ArchiveReader zip(path);
    const PickledPair pair = parse_tensor_pair_pickle(zip.record("data.pkl"), path, kWrite);
    at::Tensor x = load_one(zip, pair.input, path, "\"input\"");
    at::Tensor y = load_one(zip, pair.target, path, "\"target\"");
    if (x.dim() < 1 || y.dim() < 1 || x.size(0) != y.size(0))
      throw UsageError(fmt::format("the tensors file '{}': input has shape {} and target {}; both need "
                                   "one row per sample (the same first dimension)",
                                   path, shape_of(x), shape_of(y)),
                       kWrite);
    return {x.contiguous(), y.contiguous()};
  } catch (Error& e) {
    e.at(key);
    throw;
  }
}

}  // namespace

std::unique_ptr<Dataset> make_tensors(const DataSpec& d, Split split) {
  if (d.path.empty())
    throw UsageError("data.name is tensors but data.path is empty", fmt::format("set data.path; {}", kWrite))
        .at("data.path");
  if (split == Split::Val && !d.val_path.empty()) {
    auto [x, y] = load_tensor_pair(d.val_path, "data.val_path");
    return std::make_unique<RowTensors>(x, y);
  }
  auto [x, y] = load_tensor_pair(d.path, "data.path");
  const int64_t n = x.size(0);
  const int64_t val = d.val_path.empty()
                          ? static_cast<int64_t>(std::floor(static_cast<double>(n) * d.val_fraction))
                          : 0;
  if (split == Split::Train)
    return std::make_unique<RowTensors>(x.narrow(0, 0, n - val), y.narrow(0, 0, n - val));
  return std::make_unique<RowTensors>(x.narrow(0, n - val, val), y.narrow(0, n - val, val));
}

}  // namespace mtrain::trainer
