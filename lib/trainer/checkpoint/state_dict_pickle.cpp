#include "lib/trainer/checkpoint/state_dict_pickle.hpp"

#include <malloc.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/trainer/checkpoint/unpickler.hpp"

namespace mtrain::trainer {

namespace {

PickledTensor materialize(const TensorEntry& e, const MappedArray<int64_t>& dims) {
  PickledTensor t;
  t.name = std::string(e.name);
  t.storage_type = std::string(e.storage_type);
  t.item_size = storage_item_size(e.storage_type);
  t.storage_key = std::string(e.storage_key);
  t.storage_offset = e.storage_offset;
  t.storage_numel = e.storage_numel;
  const int64_t* first = dims.data() + e.dims;
  t.shape.assign(first, first + e.ndim);
  t.stride.assign(first + e.ndim, first + 2 * e.ndim);
  return t;
}

bool holds_tensors(const PickleObjects& o, PickleRef d) {
  bool found = false;
  bool is_value = false;
  o.each(d, [&](PickleRef x) {
    found = found || (is_value && o.kind(x) == PickleKind::Tensor);
    is_value = !is_value;
  });
  return found;
}

// Calls f(key, value) for each entry of a dict whose key is a string.
template <class F>
void each_named(const PickleObjects& o, PickleRef d, F&& f) {
  PickleRef key = PickleObjects::kNone;
  bool is_value = false;
  o.each(d, [&](PickleRef x) {
    if (is_value && o.kind(key) == PickleKind::Str) f(o.text(key), x);
    key = x;
    is_value = !is_value;
  });
}

// The dict of tensors in `root`: itself, or its one entry that is one (prefix = that key).
PickleRef state_dict_in(const PickleObjects& o, PickleRef root, const std::string& file, std::string& prefix) {
  const std::string hint =
      "save a dict of tensors: torch.save(model.state_dict(), path) (a dict holding it under one "
      "key such as 'state_dict' or 'model' is also accepted)";
  if (o.kind(root) != PickleKind::Dict) {
    throw UsageError(fmt::format("{}: the saved object is not a dict of tensors", file), hint);
  }
  if (holds_tensors(o, root)) return root;
  std::vector<std::pair<std::string_view, PickleRef>> candidates;
  each_named(o, root, [&](std::string_view k, PickleRef v) {
    if (o.kind(v) == PickleKind::Dict && holds_tensors(o, v)) candidates.emplace_back(k, v);
  });
  if (candidates.empty()) throw UsageError(fmt::format("{}: the saved dict holds no tensors", file), hint);
  size_t pick = 0;
  if (candidates.size() > 1) {
    pick = candidates.size();
    for (size_t i = 0; i < candidates.size() && pick == candidates.size(); ++i)
      if (candidates[i].first == "state_dict" || candidates[i].first == "model") pick = i;
    if (pick == candidates.size()) {
      std::string keys;
      for (const auto& c : candidates) keys += fmt::format("{}'{}'", keys.empty() ? "" : ", ", c.first);
      throw UsageError(fmt::format("{}: the saved dict holds several dicts of tensors ({}); which one is "
                                   "the model is ambiguous",
                                   file, keys),
                       hint);
    }
  }
  prefix = std::string(candidates[pick].first);
  return candidates[pick].second;
}

}  // namespace

PickledStateDict parse_state_dict_pickle(const std::string& pkl, const std::string& file) {
  PickledStateDict out;
  // Mapped, as the arena: after earlier loads glibc would keep these in a heap it cannot return.
  MappedArray<TensorEntry> entries;
  MappedArray<int64_t> dims;
  {
    Unpickler parser(pkl, file);
    const PickleObjects& o = parser.objects();
    const PickleRef sd = state_dict_in(o, parser.run(), file, out.prefix);
    each_named(o, sd, [&](std::string_view k, PickleRef v) {
      if (o.kind(v) == PickleKind::Tensor) {
        entries.push_back(parser.entry(k, v, dims));
      } else if (out.skipped.size() < 100) {
        out.skipped.emplace_back(k);
      }
    });
  }
#ifdef __GLIBC__
  // The arena is unmapped by now; what glibc holds freed in its heap goes back too before the
  // result is built: after earlier large loads it serves big blocks from that heap and keeps
  // freed ones resident (10^5 tensors after test_hostile_inputs' safetensors cases: 54 MB
  // without, 46 MB with).
  ::malloc_trim(0);
#endif
  // A key set twice: the last value wins, in the first one's place, as in Python's dict.
  std::vector<uint32_t> by_name(entries.size());
  for (uint32_t i = 0; i < by_name.size(); ++i) by_name[i] = i;
  std::stable_sort(by_name.begin(), by_name.end(), [&](uint32_t a, uint32_t b) { return entries[a].name < entries[b].name; });
  std::vector<bool> replaced(entries.size());
  for (size_t a = 0, b = 0; a < by_name.size(); a = b) {
    for (b = a + 1; b < by_name.size() && entries[by_name[b]].name == entries[by_name[a]].name; ++b) replaced[by_name[b]] = true;
    entries[by_name[a]] = entries[by_name[b - 1]];
  }
  by_name = {};
  out.tensors.reserve(static_cast<size_t>(std::count(replaced.begin(), replaced.end(), false)));
  for (size_t i = 0; i < entries.size(); ++i)
    if (!replaced[i]) out.tensors.push_back(materialize(entries[i], dims));
  return out;
}

PickledPair parse_tensor_pair_pickle(const std::string& pkl, const std::string& file,
                                     const std::string& hint) {
  Unpickler parser(pkl, file);
  const PickleObjects& o = parser.objects();
  const PickleRef root = parser.run();
  auto tensor_at = [&](PickleRef v, const std::string& what) {
    if (o.kind(v) != PickleKind::Tensor) {
      throw UsageError(
          fmt::format("the tensors file '{}': {} is a {}, not a torch tensor", file, what, pickle_kind_name(o.kind(v))),
          "convert it with torch.as_tensor(...) before saving; " + hint);
    }
    MappedArray<int64_t> dims;
    return materialize(parser.entry("", v, dims), dims);
  };
  PickledPair out;
  const PickleKind kind = o.kind(root);
  if (kind == PickleKind::Dict) {
    std::optional<PickleRef> x, y;
    each_named(o, root, [&](std::string_view k, PickleRef v) {
      if (k == "input") x = v;
      if (k == "target") y = v;
    });
    for (const auto& [key, v] : {std::pair{"input", x}, std::pair{"target", y}}) {
      if (!v) throw UsageError(fmt::format("the tensors file '{}' is a dict without the key \"{}\"", file, key), hint);
    }
    out.input = tensor_at(*x, "\"input\"");
    out.target = tensor_at(*y, "\"target\"");
    return out;
  }
  const bool sequence = kind == PickleKind::Tuple || kind == PickleKind::List;
  if (sequence && o.size(root) == 2) {
    out.input = tensor_at(o.at(root, 0), "element 0");
    out.target = tensor_at(o.at(root, 1), "element 1");
    return out;
  }
  throw UsageError(fmt::format("the tensors file '{}' holds a {}{}", file, pickle_kind_name(kind),
                               sequence ? fmt::format(" of {} elements", o.size(root)) : std::string()),
                   hint + "; e.g. torch.save(dict(input=X, target=Y), PATH)");
}

std::string pickled_tensor_problem(const PickledTensor& t, uint64_t record_bytes) {
  const uint64_t es = t.item_size;
  if (static_cast<uint64_t>(t.storage_numel) > record_bytes / es) {
    return fmt::format("its storage data/{} is declared as {} elements of {} bytes, but the record "
                       "holds {} bytes", t.storage_key, t.storage_numel, es, record_bytes);
  }
  if (t.storage_offset < 0) return fmt::format("a negative storage offset {}", t.storage_offset);
  // The last element the shape and strides reach, without overflow; an empty tensor reaches none.
  uint64_t last = static_cast<uint64_t>(t.storage_offset);
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] < 0) return fmt::format("a negative size {} in dimension {}", t.shape[d], d);
    if (t.shape[d] == 0) return "";
  }
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.stride[d] < 0) return fmt::format("a negative stride {} in dimension {}", t.stride[d], d);
    uint64_t step = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(t.shape[d] - 1), static_cast<uint64_t>(t.stride[d]), &step) ||
        __builtin_add_overflow(last, step, &last)) {
      return "its sizes and strides overflow";
    }
  }
  if (last >= static_cast<uint64_t>(t.storage_numel)) {
    return fmt::format("its elements reach element {} of a storage of {}", last, t.storage_numel);
  }
  return "";
}

}  // namespace mtrain::trainer
