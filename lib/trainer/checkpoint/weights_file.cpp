#include "lib/trainer/checkpoint/weights_file.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include <c10/util/accumulate.h>
#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/untrusted_file.hpp"
#include "lib/trainer/checkpoint/checkpointer.hpp"
#include "lib/trainer/checkpoint/manifest.hpp"
#include "lib/trainer/checkpoint/safetensors.hpp"
#include "lib/trainer/checkpoint/shard_io.hpp"
#include "lib/trainer/checkpoint/state_dict_pickle.hpp"
#include "lib/trainer/checkpoint/tensor_archive.hpp"
#include "lib/trainer/checkpoint/verify.hpp"

namespace mtrain::trainer {

namespace fs = std::filesystem;

namespace {


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
    zip_ = std::make_unique<ArchiveReader>(path);
    sd_ = parse_state_dict_pickle(zip_->record("data.pkl"), path);
    entries_.reserve(sd_.tensors.size());
    for (size_t i = 0; i < sd_.tensors.size(); ++i) {
      const auto& t = sd_.tensors[i];
      // Every tensor against its record before any is read: a storage declared larger than its
      // record would otherwise read on into the next zip entry.
      const std::string problem = pickled_tensor_problem(t, zip_->record_bytes(t.storage_key));
      if (!problem.empty()) {
        throw UsageError(fmt::format("{}: tensor '{}' does not fit its data: {}", path, t.name, problem),
                         "the file is damaged or was edited; save it again with torch.save(model.state_dict(), path)");
      }
      entries_.push_back({t.name, t.shape, pickled_scalar_type(t)});
    }
    // By name, for read: 4 bytes a tensor where a std::map node cost ~80 (10^5 tensors: 8 MB).
    by_name_.resize(sd_.tensors.size());
    for (uint32_t i = 0; i < by_name_.size(); ++i) by_name_[i] = i;
    std::sort(by_name_.begin(), by_name_.end(), [&](uint32_t a, uint32_t b) { return sd_.tensors[a].name < sd_.tensors[b].name; });
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
    const auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                                     [&](uint32_t i, const std::string& n) { return sd_.tensors[i].name < n; });
    if (it == by_name_.end() || sd_.tensors[*it].name != name) throw std::out_of_range("no tensor named " + name);
    const PickledTensor& t = sd_.tensors[*it];
    return read_pickled_tensor(*zip_, t, pickled_scalar_type(t)).narrow(0, offset, numel).clone();
  }

 private:
  std::string path_;
  std::unique_ptr<ArchiveReader> zip_;
  PickledStateDict sd_;
  std::vector<WeightsEntry> entries_;
  std::vector<uint32_t> by_name_;  // indices of sd_.tensors, sorted by name
};

// The folder checked as checkpoint.resume checks it (verify.hpp: the COMPLETE marker, the
// manifest and its checksum, every shard's type, size and CRC-32C, each record's size against its
// piece's numel × dtype, coverage), before any tensor is read: a bit-flipped or swapped shard, or
// a FIFO in its place, is refused naming the file, where --init used to load it silently (or hang
// in open()). Every rank checks every file: --init reads them all anyway.
const std::string& verified(const std::string& dir) {
  const VerifyReport rep = verify_checkpoint(dir);
  if (!rep.ok()) {
    throw UsageError(rep.problem(),
                     "model.init names a complete, undamaged checkpoint folder (step_<N>); "
                     "`mtrain checkpoint verify DIR` lists every problem");
  }
  return dir;
}

// The model/ tensors of a checkpoint folder, under their parameter names.
class CheckpointWeights final : public WeightsFile {
 public:
  explicit CheckpointWeights(const std::string& dir) : r_(verified(dir)) {
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

at::ScalarType pickled_scalar_type(const PickledTensor& t) {
  static const std::map<std::string, at::ScalarType> m = {
      {"FloatStorage", at::kFloat},  {"DoubleStorage", at::kDouble}, {"HalfStorage", at::kHalf},
      {"BFloat16Storage", at::kBFloat16}, {"LongStorage", at::kLong}, {"IntStorage", at::kInt},
      {"ShortStorage", at::kShort},  {"CharStorage", at::kChar},     {"ByteStorage", at::kByte},
      {"BoolStorage", at::kBool}};
  return m.at(t.storage_type);  // the parser admits only these (state_dict_pickle.cpp)
}

at::Tensor read_pickled_tensor(ArchiveReader& zip, const PickledTensor& t, at::ScalarType dtype) {
  const int64_t n = c10::multiply_integers(t.shape);
  if (n == 0) return at::empty({0}, at::TensorOptions().dtype(dtype));
  // The elements of the storage the tensor spans (a view saved from Python may be strided);
  // pickled_tensor_problem has checked that they lie inside the storage and the record.
  int64_t extent = 1;
  for (size_t d = 0; d < t.shape.size(); ++d) extent += (t.shape[d] - 1) * t.stride[d];
  if (at::IntArrayRef(t.stride) == at::IntArrayRef(c10::contiguous_strides(t.shape)) || n == 1) {
    return zip.read(t.storage_key, dtype, t.storage_offset, n);
  }
  at::Tensor span = zip.read(t.storage_key, dtype, t.storage_offset, extent);
  return span.as_strided(t.shape, t.stride).contiguous().reshape({-1});
}

std::unique_ptr<WeightsFile> open_weights_file(const std::string& path) {
  const std::string hint =
      "model.init takes a .safetensors file, a state dict written by torch.save(model.state_dict(), "
      "path), mtrain's model.pt or a checkpoint folder (step_<N>)";
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!fs::exists(fs::path(path) / "manifest.json")) {
      throw UsageError(fmt::format("model.init '{}' is a folder without manifest.json", path), hint);
    }
    return std::make_unique<CheckpointWeights>(path);
  }
  // Say what the path is (a FIFO, a link to /dev/zero, …), not "does not exist"; never block.
  std::string why;
  UntrustedFile f = open_untrusted(path, &why);
  if (f.fd() < 0) throw UsageError(fmt::format("model.init '{}' {}", path, why), hint);
  unsigned char magic[4] = {0, 0, 0, 0};
  const bool has4 = f.pread_exact(magic, std::min<uint64_t>(4, f.size()), 0) && f.size() >= 4;
  const bool named_safetensors = path.size() >= 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0;
  // A .safetensors name, or a plausible header: read as safetensors, whose reader then says
  // precisely what is wrong (a bad length was reported as a "legacy torch.save" file).
  if (named_safetensors || looks_like_safetensors(path)) return std::make_unique<SafetensorsWeights>(path);
  if (has4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4) {
    return std::make_unique<TorchZipWeights>(path);
  }
  // The legacy format starts with a pickled magic number: PROTO 2..5, then LONG1.
  if (has4 && magic[0] == 0x80 && magic[1] >= 2 && magic[1] <= 5 && magic[2] == 0x8a) {
    throw UsageError(fmt::format("{}: a torch.save file in the legacy (pre-1.6, non-zip) format", path),
                     "save it again with a current torch.save (the zip format is the default), or as "
                     "safetensors");
  }
  throw UsageError(fmt::format("{}: neither safetensors nor a torch.save zip archive", path), hint);
}

}  // namespace mtrain::trainer
