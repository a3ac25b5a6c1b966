#include "mtrain/trainer/checkpoint/weights_file.hpp"

#include <filesystem>
#include <fstream>
#include <map>

#include <c10/util/accumulate.h>
#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/trainer/checkpoint/checkpointer.hpp"
#include "mtrain/trainer/checkpoint/manifest.hpp"
#include "mtrain/trainer/checkpoint/safetensors.hpp"
#include "mtrain/trainer/checkpoint/shard_io.hpp"
#include "mtrain/trainer/checkpoint/state_dict_pickle.hpp"
#include "mtrain/trainer/checkpoint/tensor_archive.hpp"

namespace mtrain::trainer {

namespace fs = std::filesystem;

namespace {

const std::string kModelPrefix = "model/";

class SafetensorsWeights final : public WeightsFile {
 public:
  explicit SafetensorsWeights(const std::string& path) : r_(path) {
    for (const auto& t : r_.tensors()) entries_.push_back({t.name, t.shape, t.dtype});
  }
  std::string format() const override { return "safetensors"; }
  const std::vector<WeightsEntry>& entries() const override { return entries_; }
  at::Tensor read(const std::string& name, int64_t offset, int64_t numel) const override {
    return r_.read(name, offset, numel);
  }

 private:
  SafetensorsReader r_;
  std::vector<WeightsEntry> entries_;
};

class TorchZipWeights final : public WeightsFile {
 public:
  explicit TorchZipWeights(const std::string& path) : path_(path) {
    try {
      zip_ = std::make_unique<ArchiveReader>(path);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: not a readable torch.save archive ({})", path, e.message()),
                  "save the weights again with torch.save(model.state_dict(), path)");
    }
    sd_ = parse_state_dict_pickle(zip_->record("data.pkl"), path);
    for (size_t i = 0; i < sd_.tensors.size(); ++i) {
      const auto& t = sd_.tensors[i];
      entries_.push_back({t.name, t.shape, t.dtype});
      index_[t.name] = i;
    }
  }
  std::string format() const override { return "torch state dict"; }
  const std::vector<WeightsEntry>& entries() const override { return entries_; }
  std::string note() const override {
    std::string s;
    if (!sd_.prefix.empty()) s = fmt::format("the state dict is the file's '{}' entry", sd_.prefix);
    if (!sd_.skipped.empty()) {
      s += (s.empty() ? "" : "; ") + fmt::format("non-tensor entries ignored: {}", fmt::join(sd_.skipped, ", "));
    }
    return s;
  }
  at::Tensor read(const std::string& name, int64_t offset, int64_t numel) const override {
    const PickledTensor& t = sd_.tensors.at(index_.at(name));
    const int64_t n = c10::multiply_integers(t.shape);
    if (n == 0 || numel == 0) return at::empty({0}, at::TensorOptions().dtype(t.dtype));
    // The elements of the storage the tensor spans (a view saved from Python may be strided).
    int64_t extent = 1;
    for (size_t d = 0; d < t.shape.size(); ++d) extent += (t.shape[d] - 1) * t.stride[d];
    if (t.storage_offset < 0 || t.storage_offset + extent > t.storage_numel) {
      throw Error(fmt::format("{}: tensor '{}' lies outside its storage ({} elements)", path_, name,
                              t.storage_numel), "the file is damaged; save it again");
    }
    if (at::IntArrayRef(t.stride) == at::IntArrayRef(c10::contiguous_strides(t.shape)) || n == 1) {
      return zip_->read(t.storage_key, t.dtype, t.storage_offset + offset, numel);
    }
    at::Tensor span = zip_->read(t.storage_key, t.dtype, t.storage_offset, extent);
    return span.as_strided(t.shape, t.stride).contiguous().reshape({-1}).narrow(0, offset, numel).clone();
  }

 private:
  std::string path_;
  std::unique_ptr<ArchiveReader> zip_;
  PickledStateDict sd_;
  std::vector<WeightsEntry> entries_;
  std::map<std::string, size_t> index_;
};

// The model/ tensors of a checkpoint folder, under their parameter names.
class CheckpointWeights final : public WeightsFile {
 public:
  explicit CheckpointWeights(const std::string& dir) : r_(dir) {
    const Manifest& m = r_.manifest();
    for (const auto& name : m.order) {
      if (name.rfind(kModelPrefix, 0) != 0) continue;
      const TensorMeta& meta = m.tensors.at(name);
      entries_.push_back({name.substr(kModelPrefix.size()), meta.shape, dtype_from_name(meta.dtype)});
    }
  }
  std::string format() const override { return "mtrain checkpoint"; }
  const std::vector<WeightsEntry>& entries() const override { return entries_; }
  at::Tensor read(const std::string& name, int64_t offset, int64_t numel) const override {
    return r_.read(kModelPrefix + name, offset, numel);
  }

 private:
  CheckpointReader r_;
  std::vector<WeightsEntry> entries_;
};

}  // namespace

std::unique_ptr<WeightsFile> open_weights_file(const std::string& path) {
  const std::string hint =
      "model.init takes a .safetensors file, a state dict written by torch.save(model.state_dict(), "
      "path), mtrain's model.pt or a checkpoint folder (step_<N>)";
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!fs::exists(fs::path(path) / "manifest.json")) {
      throw Error(fmt::format("model.init '{}' is a folder without manifest.json", path), hint);
    }
    return std::make_unique<CheckpointWeights>(path);
  }
  if (!fs::is_regular_file(path, ec)) throw Error(fmt::format("model.init file '{}' does not exist", path), hint);
  if (looks_like_safetensors(path)) return std::make_unique<SafetensorsWeights>(path);
  char magic[4] = {0, 0, 0, 0};
  std::ifstream in(path, std::ios::binary);
  in.read(magic, 4);
  if (in.gcount() == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4) {
    return std::make_unique<TorchZipWeights>(path);
  }
  if (in.gcount() >= 2 && static_cast<unsigned char>(magic[0]) == 0x80) {
    throw Error(fmt::format("{}: a torch.save file in the legacy (pre-1.6, non-zip) format", path),
                "save it again with a current torch.save (the zip format is the default), or as "
                "safetensors");
  }
  throw Error(fmt::format("{}: neither safetensors nor a torch.save zip archive", path), hint);
}

}  // namespace mtrain::trainer
