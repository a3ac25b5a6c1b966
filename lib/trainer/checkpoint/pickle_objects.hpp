#pragma once
// The values a pickle builds, held in one arena for the state-dict reader (state_dict_pickle.cpp).
//
// Why this shape (issue 29: an untrusted file costs at most about twice its size): a value is a
// 32-bit reference; an object is 16 bytes and owns no heap memory of its own. Strings (keys,
// global names, storage keys) are views (offset, length) into the pickle's bytes, which the
// caller keeps alive for the parse; tuples are ranges of one shared item store; lists and dicts,
// which SETITEMS/APPENDS fill in batches between other objects, are chains of such ranges
// (segments). Small integers, tensors and storages are held in the reference itself; None, the
// booleans, floats (whose value a state dict never needs) and the empty tuple are shared, as
// CPython shares (). Everything
// is freed flat when the arena goes (no recursion, however deep the nesting); its three stores
// are mapped arrays (mapped_array.hpp), unmapped whatever malloc's state, and `resident_bytes`
// is what they hold, which the unpickler charges to its budget.
// Torch-free, so the fuzz build links it.
#include <algorithm>
#include <cstdint>
#include <string_view>

#include "lib/trainer/checkpoint/mapped_array.hpp"

namespace mtrain::trainer {

enum class PickleKind : uint8_t { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, Storage, Tensor, Opaque };
// What a value is, in words for messages ("a tensor", "a Python object (…)").
const char* pickle_kind_name(PickleKind k);

using PickleRef = uint32_t;

class PickleObjects {
 public:
  // A reference's top two bits: 11 holds a 30-bit integer, 10 a Tensor and 01 a Storage (the
  // tuple it refers to in the low 30 bits: two objects a tensor saved), 00 indexes the arena.
  static constexpr PickleRef kTag = 0xc0000000u, kIntTag = 0xc0000000u, kTensorTag = 0x80000000u,
                             kStorageTag = 0x40000000u;
  static constexpr uint64_t kMaxObjects = uint64_t{1} << 30;
  static constexpr PickleRef kNone = 0, kFalse = 1, kTrue = 2, kFloat = 3, kEmptyTuple = 4;

  explicit PickleObjects(std::string_view bytes);

  PickleRef integer(int64_t v);
  PickleRef str(uint64_t offset, uint64_t size);  // a view of the pickle's bytes
  PickleRef make(PickleKind k);                  // an empty Dict or List, an Opaque object
  // A Storage refers to its persistent id (a tuple), a Tensor to its (storage, offset, size,
  // stride) tuple: both were checked when they were made, and tuples do not change.
  static PickleRef wrap(PickleKind k, PickleRef tuple) { return (k == PickleKind::Tensor ? kTensorTag : kStorageTag) | tuple; }
  // A tuple of the items [first, first + n) of `from`, any random-access sequence of references.
  template <class Seq>
  PickleRef tuple(const Seq& from, size_t first, size_t n) {
    if (n == 0) return kEmptyTuple;
    const uint64_t begin = items_.size();
    uint64_t d = 0;
    for (size_t i = 0; i < n; ++i) items_.push_back(from[first + i]), d = std::max(d, depth(from[first + i]));
    const PickleRef t = add(PickleKind::Tuple, n, begin);
    deepen(t, d + 1);
    return t;
  }
  PickleRef global(PickleRef module, PickleRef name);
  // Adds the items [first, first + n) of `from` to a List or Dict (key, value, key, value, …).
  template <class Seq>
  void append(PickleRef container, const Seq& from, size_t first, size_t n) {
    if (n == 0) return;
    Segment& s = open_segment(container, n);
    uint64_t d = 0;
    for (size_t i = 0; i < n; ++i) items_.push_back(from[first + i]), d = std::max(d, depth(from[first + i]));
    s.count += static_cast<uint32_t>(n);
    deepen(container, d + 1);
  }

  PickleKind kind(PickleRef r) const;
  int64_t int_value(PickleRef r) const;  // of an Int or Bool
  std::string_view text(PickleRef r) const;  // of a Str
  std::string_view module(PickleRef g) const;  // of a Global
  std::string_view name(PickleRef g) const;
  static PickleRef target(PickleRef r) { return r & ~kTag; }  // of a Storage or Tensor
  uint64_t size(PickleRef r) const;  // items of a Tuple, List or Dict
  PickleRef at(PickleRef r, uint64_t i) const;  // item i of a Tuple, List or Dict (i < size)
  // Calls f(item) for each item of a Tuple, List or Dict, in order.
  template <class F>
  void each(PickleRef r, F&& f) const {
    const Obj& o = objs_[r];
    if (o.kind() == PickleKind::Tuple) {
      for (uint64_t i = 0; i < o.n(); ++i) f(items_[o.v + i]);
      return;
    }
    for (uint32_t s = first_segment(o); s != 0; s = segments_[s].next)
      for (uint32_t i = 0; i < segments_[s].count; ++i) f(items_[segments_[s].begin + i]);
  }
  uint64_t objects() const { return objs_.size(); }
  // How many containers deep a value is as built: 0 for a scalar or an empty container, else one
  // more than its deepest item when that item went in (a list filled after it was itself put
  // into another container does not deepen that one: the budget still bounds such a pickle).
  // Saturates at kMaxDepth.
  uint64_t depth(PickleRef r) const { return (r & kTag) != 0 ? 0 : objs_[r].depth(); }
  static constexpr uint64_t kMaxDepth = 0xffff;
  // The bytes the arena holds: every page its stores have touched.
  uint64_t resident_bytes() const {
    return objs_.resident_bytes() + items_.resident_bytes() + segments_.resident_bytes();
  }

 private:
  // kind in the low 8 bits of `head`, the depth in the next 16, a count (string length, items)
  // in the top 40; `v`: the value, offset, first item, or (List, Dict) first and last segment.
  struct Obj {
    uint64_t head;
    uint64_t v;
    PickleKind kind() const { return static_cast<PickleKind>(head & 0xff); }
    uint64_t depth() const { return (head >> 8) & kMaxDepth; }
    uint64_t n() const { return head >> kCountShift; }
  };
  static constexpr int kCountShift = 24;
  struct Segment {
    uint64_t begin;
    uint32_t count;
    uint32_t next;  // 0: the last
  };
  PickleRef add(PickleKind k, uint64_t n, uint64_t v);
  static uint32_t first_segment(const Obj& o) { return static_cast<uint32_t>(o.v); }
  Segment& open_segment(PickleRef container, uint64_t n);
  // Raises a container's depth to d (saturating).
  void deepen(PickleRef c, uint64_t d) {
    Obj& o = objs_[c];
    d = std::min(d, kMaxDepth);
    if (d > o.depth()) o.head = (o.head & ~(kMaxDepth << 8)) | (d << 8);
  }

  std::string_view bytes_;
  MappedArray<Obj> objs_;
  MappedArray<PickleRef> items_;
  MappedArray<Segment> segments_;  // [0] unused: 0 means none
};

}  // namespace mtrain::trainer
