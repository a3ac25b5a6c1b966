// tensors: a file written by Python's torch.save({"input": X, "target": Y}, PATH) (the default
// zip format); sample i = (X[i], Y[i]), whatever X's dtype and shape (images, features, token
// ids). Read with torch::jit::pickle_load, LibTorch's C++ unpickler, which understands plain
// dicts, lists and tuples of tensors but turns a collections.OrderedDict into None and cannot
// read numpy arrays or the legacy (non-zip) format — each of those gets a paragraph saying what
// to write instead. A (X, Y) tuple or list is accepted as well. The whole file is read into memory
// (every rank holds the dataset; the sampler decides who reads which rows).
#include "mtrain/core/error.hpp"
#include "mtrain/trainer/data/datasets.hpp"
#include "mtrain/trainer/model/models.hpp"

#include <torch/csrc/jit/serialization/pickle.h>

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace mtrain::trainer {
namespace {

constexpr const char* kWrite =
    "write it with torch.save({\"input\": X, \"target\": Y}, PATH): a plain dict (not an "
    "OrderedDict or a TensorDataset) of two torch tensors (not numpy arrays) with the same "
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

std::vector<char> read_bytes(const std::string& path, const char* key) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(fmt::format("cannot read the tensors file '{}': {}", path, std::strerror(errno)),
                fmt::format("check {}; {}", key, kWrite))
        .at(key);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

at::Tensor tensor_at(const c10::IValue& v, const std::string& path, const char* what,
                     const char* key) {
  if (!v.isTensor())
    throw Error(fmt::format("the tensors file '{}': {} is a {}, not a torch tensor", path, what,
                            v.isNone() ? "None (an unsupported Python object)" : v.tagKind()),
                fmt::format("convert it with torch.as_tensor(...) before saving; {}", kWrite))
        .at(key);
  return v.toTensor();
}

// The (input, target) pair stored in `path`; `key` is the setting that named it.
std::pair<at::Tensor, at::Tensor> load_tensor_pair(const std::string& path, const char* key) {
  const std::vector<char> bytes = read_bytes(path, key);
  c10::IValue v;
  try {
    v = torch::jit::pickle_load(bytes);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    // An OrderedDict becomes None, and filling it with its items then fails inside the reader.
    if (what.find("but got None") != std::string::npos)
      throw Error(fmt::format("the tensors file '{}' holds a Python object LibTorch's C++ "
                              "unpickler reads as None — typically a collections.OrderedDict "
                              "(e.g. a state_dict) or another Python class",
                              path),
                  fmt::format("{}; e.g. torch.save(dict(input=X, target=Y), PATH)", kWrite))
          .at(key);
    const std::string first = what.substr(0, what.find('\n'));
    throw Error(fmt::format("the tensors file '{}' cannot be read by LibTorch's unpickler: {}",
                            path, first),
                fmt::format("{} (no _use_new_zipfile_serialization=False, no custom classes)",
                            kWrite))
        .at(key);
  }
  at::Tensor x, y;
  if (v.isGenericDict()) {
    const auto d = v.toGenericDict();
    for (const char* k : {"input", "target"})
      if (!d.contains(k))
        throw Error(fmt::format("the tensors file '{}' is a dict without the key \"{}\"", path, k),
                    kWrite)
            .at(key);
    x = tensor_at(d.at("input"), path, "\"input\"", key);
    y = tensor_at(d.at("target"), path, "\"target\"", key);
  } else if ((v.isTuple() && v.toTupleRef().elements().size() == 2) ||
             (v.isList() && v.toListRef().size() == 2)) {
    const auto& e0 = v.isTuple() ? v.toTupleRef().elements()[0] : v.toListRef()[0];
    const auto& e1 = v.isTuple() ? v.toTupleRef().elements()[1] : v.toListRef()[1];
    x = tensor_at(e0, path, "element 0", key);
    y = tensor_at(e1, path, "element 1", key);
  } else {
    throw Error(fmt::format("the tensors file '{}' holds {}", path,
                            v.isNone() ? "an object LibTorch's C++ unpickler reads as None — "
                                         "typically a collections.OrderedDict (e.g. a state_dict) "
                                         "or another Python class"
                                       : std::string("a ") + v.tagKind()),
                fmt::format("{}; e.g. torch.save(dict(input=X, target=Y), PATH)", kWrite))
        .at(key);
  }
  if (x.dim() < 1 || y.dim() < 1 || x.size(0) != y.size(0))
    throw Error(fmt::format("the tensors file '{}': input has shape {} and target {}; both need "
                            "one row per sample (the same first dimension)",
                            path, shape_of(x), shape_of(y)),
                kWrite)
        .at(key);
  return {x.contiguous(), y.contiguous()};
}

}  // namespace

std::unique_ptr<Dataset> make_tensors(const DataSpec& d, Split split) {
  if (d.path.empty())
    throw Error("data.name is tensors but data.path is empty", fmt::format("set data.path; {}", kWrite))
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
