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
//
// Untrusted input (issue 29): no recursion anywhere (objects live in an arena, freed flat:
// pickle_objects.hpp, 16 bytes an object, strings as views of the pickle); the reader holds at
// most max(1 MiB, the pickle's size) plus 408 bytes a tensor beyond the pickle, and refuses
// nesting deeper than 256 and stacks wider than 2^16 (unpickler.hpp); shapes have at most 64
// dimensions, storage sizes are non-negative. The arena and the entries are mapped arrays, freed
// (unmapped) before the result is built whatever malloc's state. Torch-free (the dtype is the
// storage class's name), so the fuzz build links it.
#include <cstdint>
#include <string>
#include <vector>

namespace mtrain::trainer {

struct PickledTensor {
  std::string name;  // the dict key
  std::string storage_type;  // "FloatStorage", …: the dtype
  uint64_t item_size = 4;    // bytes per element of that storage
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

// The data file of the `tensors` dataset: {"input": X, "target": Y} (a dict, plain or ordered,
// maybe with more keys) or an (X, Y) tuple/list. Throws mtrain::Error naming `file` and what the
// pickle holds instead, with `hint` (how to write the file) as its hint.
struct PickledPair {
  PickledTensor input, target;
};
PickledPair parse_tensor_pair_pickle(const std::string& pkl, const std::string& file,
                                     const std::string& hint);

// Checks that the tensor's elements (shape, strides, offset) lie inside its storage and that the
// storage fits in `record_bytes`; "" when they do, else what is wrong (for a message).
std::string pickled_tensor_problem(const PickledTensor& t, uint64_t record_bytes);

}  // namespace mtrain::trainer
