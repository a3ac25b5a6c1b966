#include "lib/trainer/checkpoint/pickle_objects.hpp"

namespace mtrain::trainer {

const char* pickle_kind_name(PickleKind k) {
  switch (k) {
    case PickleKind::None: return "None (or a Python object mtrain does not read)";
    case PickleKind::Bool: return "bool";
    case PickleKind::Int: return "int";
    case PickleKind::Float: return "float";
    case PickleKind::Str: return "string";
    case PickleKind::Tuple: return "tuple";
    case PickleKind::List: return "list";
    case PickleKind::Dict: return "dict";
    case PickleKind::Global: return "class or function";
    case PickleKind::Storage: return "storage";
    case PickleKind::Tensor: return "tensor";
    default: return "Python object (a class instance, a numpy array, …)";
  }
}

PickleObjects::PickleObjects(std::string_view bytes) : bytes_(bytes) {
  // The shared values, at the references kNone … kEmptyTuple.
  add(PickleKind::None, 0, 0);
  add(PickleKind::Bool, 0, 0);
  add(PickleKind::Bool, 0, 1);
  add(PickleKind::Float, 0, 0);
  add(PickleKind::Tuple, 0, 0);
  segments_.push_back({0, 0, 0});
}

PickleRef PickleObjects::add(PickleKind k, uint64_t n, uint64_t v) {
  objs_.push_back({static_cast<uint64_t>(k) | (n << kCountShift), v});
  return static_cast<PickleRef>(objs_.size() - 1);
}

PickleRef PickleObjects::integer(int64_t v) {
  if (v >= -(int64_t{1} << 29) && v < (int64_t{1} << 29)) return kIntTag | (static_cast<uint32_t>(v) & ~kTag);
  return add(PickleKind::Int, 0, static_cast<uint64_t>(v));
}

PickleRef PickleObjects::str(uint64_t offset, uint64_t size) { return add(PickleKind::Str, size, offset); }

PickleRef PickleObjects::make(PickleKind k) { return add(k, 0, 0); }

PickleRef PickleObjects::global(PickleRef module, PickleRef name) {
  const PickleRef parts[] = {module, name};
  const PickleRef t = tuple(parts, 0, 2);
  return add(PickleKind::Global, 2, objs_[t].v);
}

PickleKind PickleObjects::kind(PickleRef r) const {
  switch (r & kTag) {
    case kIntTag: return PickleKind::Int;
    case kTensorTag: return PickleKind::Tensor;
    case kStorageTag: return PickleKind::Storage;
    default: return objs_[r].kind();
  }
}

int64_t PickleObjects::int_value(PickleRef r) const {
  if ((r & kTag) == kIntTag) return static_cast<int32_t>(r << 2) >> 2;  // the low 30 bits, signed
  return static_cast<int64_t>(objs_[r].v);
}

std::string_view PickleObjects::text(PickleRef r) const {
  const Obj& o = objs_[r];
  return bytes_.substr(o.v, o.n());
}

std::string_view PickleObjects::module(PickleRef g) const { return text(items_[objs_[g].v]); }

std::string_view PickleObjects::name(PickleRef g) const { return text(items_[objs_[g].v + 1]); }

uint64_t PickleObjects::size(PickleRef r) const { return objs_[r].n(); }

PickleRef PickleObjects::at(PickleRef r, uint64_t i) const {
  const Obj& o = objs_[r];
  if (o.kind() == PickleKind::Tuple) return items_[o.v + i];
  for (uint32_t s = first_segment(o); s != 0; s = segments_[s].next) {
    if (i < segments_[s].count) return items_[segments_[s].begin + i];
    i -= segments_[s].count;
  }
  return kNone;  // not reached for i < size(r)
}

// The segment that `n` more items of a List or Dict go into: its last one when nothing was added
// to the item store since (SETITEM after SETITEM), else a new one linked after it.
PickleObjects::Segment& PickleObjects::open_segment(PickleRef container, uint64_t n) {
  Obj& o = objs_[container];
  o.head += n << kCountShift;
  const auto last = static_cast<uint32_t>(o.v >> 32);
  if (last != 0) {
    Segment& s = segments_[last];
    if (s.begin + s.count == items_.size() && s.count + n <= UINT32_MAX) return s;
  }
  segments_.push_back({items_.size(), 0, 0});
  const auto fresh = static_cast<uint32_t>(segments_.size() - 1);
  if (last == 0) {
    o.v = fresh;
  } else {
    segments_[last].next = fresh;
  }
  o.v = (o.v & 0xffffffffu) | (uint64_t{fresh} << 32);
  return segments_.back();
}

}  // namespace mtrain::trainer
