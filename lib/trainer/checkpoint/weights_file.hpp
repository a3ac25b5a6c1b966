#pragma once
// A file of named weights, whatever wrote it, read by element range (never whole):
//   * safetensors (huggingface format; safetensors.hpp),
//   * a torch.save'd state dict (zip format: Python's torch.save(model.state_dict(), f) —
//     an OrderedDict — or a plain dict, or a dict holding it under 'state_dict'/'model'),
//   * mtrain's own model.pt (the same zip, written by tensor_archive.cpp),
//   * an mtrain checkpoint folder (step_<N>, with manifest.json): its model/ tensors.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace mtrain::trainer {

struct WeightsEntry {
  std::string name;
  std::vector<int64_t> shape;
  at::ScalarType dtype = at::kFloat;
};

class WeightsFile {
 public:
  virtual ~WeightsFile() = default;
  // "safetensors", "torch state dict", "mtrain checkpoint".
  virtual std::string format() const = 0;
  virtual const std::vector<WeightsEntry>& entries() const = 0;
  // `numel` elements from element `offset` of the flattened tensor, in its stored dtype.
  virtual at::Tensor read(const std::string& name, int64_t offset, int64_t numel) const = 0;
  // A line worth printing about how the file was read ("" if none), e.g. which key held the
  // state dict and which non-tensor entries were skipped.
  virtual std::string note() const { return ""; }
};

// Detects the format from the first bytes. Throws mtrain::Error (exit 2) naming the file when it
// is missing, of an unknown format (the legacy non-zip torch.save format included) or damaged.
std::unique_ptr<WeightsFile> open_weights_file(const std::string& path);

class ArchiveReader;
struct PickledTensor;
// The dtype of a pickled storage class (torch.FloatStorage → float32, …).
at::ScalarType pickled_scalar_type(const PickledTensor& t);
// The whole tensor `t` of a torch.save archive as a flat contiguous tensor of `dtype` (its strides
// applied). The caller has checked it with pickled_tensor_problem.
at::Tensor read_pickled_tensor(ArchiveReader& zip, const PickledTensor& t, at::ScalarType dtype);

}  // namespace mtrain::trainer
