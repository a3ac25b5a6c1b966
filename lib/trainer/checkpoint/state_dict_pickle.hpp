#pragma once
// The tensors of a state dict pickled by torch.save (Python) or torch::pickle_save / mtrain's
// model.pt (C++), as metadata only: name, dtype, shape, strides, storage record key and offset.
// No tensor data is touched, so a caller can read any element range later by pread.
//
// Why not torch::pickle_load: it materialises every tensor (the whole model in memory on every
// rank), and LibTorch 1.13's C++ unpickler does not rebuild collections.OrderedDict — what
// model.state_dict() returns, with its `_metadata` attribute — as a dict. This reads the
// opcodes torch.save emits (protocols 2–5): dicts, OrderedDicts (their BUILD state ignored),
// lists, tuples, scalars, strings, LibTorch's typed-dict tag (restore_type_tag), and tensors
// rebuilt by torch._utils._rebuild_tensor_v2 / _rebuild_parameter from persistent
// ('storage', torch.<T>Storage, key, location, numel) ids.
// Any other class is kept as an opaque object (never executed).
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace mtrain::trainer {

struct PickledTensor {
  std::string name;  // the dict key
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> shape, stride;
  std::string storage_key;  // record data/<key>
  int64_t storage_offset = 0;  // in elements
  int64_t storage_numel = 0;
};

struct PickledStateDict {
  std::vector<PickledTensor> tensors;  // in dict order
  std::string prefix;  // the top-level key the tensors were found under ("" = the top level)
  std::vector<std::string> skipped;  // non-tensor entries at the chosen level (e.g. "epoch")
};

// `pkl`: the bytes of data.pkl. The state dict is the top-level dict when it holds tensors;
// otherwise the one entry of it that is a dict holding tensors ("state_dict", "model", …).
// Throws mtrain::Error naming `file` when the pickle is malformed or holds no tensors by name.
PickledStateDict parse_state_dict_pickle(const std::string& pkl, const std::string& file);

}  // namespace mtrain::trainer
