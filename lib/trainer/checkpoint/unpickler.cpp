#include "lib/trainer/checkpoint/unpickler.hpp"

#include <charconv>
#include <map>

#include <fmt/format.h>

namespace mtrain::trainer {

uint64_t storage_item_size(std::string_view type_name) {
  static const std::map<std::string_view, uint64_t> m = {
      {"FloatStorage", 4}, {"DoubleStorage", 8}, {"HalfStorage", 2}, {"BFloat16Storage", 2},
      {"LongStorage", 8},  {"IntStorage", 4},    {"ShortStorage", 2}, {"CharStorage", 1},
      {"ByteStorage", 1},  {"BoolStorage", 1}};
  auto it = m.find(type_name);
  return it == m.end() ? 0 : it->second;
}

PickleRef Unpickler::run() {
  while (true) {
    op_pos_ = pos_;
    const unsigned char op = u8();
    if (op == '.') return pop();  // STOP
    if (!(stack_op(op) || container_op(op) || memo_op(op) || scalar_op(op) || object_op(op))) {
      throw bad(fmt::format("pickle opcode 0x{:02x} at byte {} is not one torch.save writes for a "
                            "state dict", op, pos_ - 1));
    }
    // One opcode adds at most a stack's width of items (kMaxStack × 4 bytes) before this check.
    check_memory();
  }
}

TensorEntry Unpickler::entry(std::string_view name, P t, MappedArray<int64_t>& dims) const {
  const P args = o_.target(t);
  const P pid = o_.target(o_.at(args, 0));
  TensorEntry e{name, o_.name(o_.at(pid, 1)), o_.text(o_.at(pid, 2)), o_.int_value(o_.at(args, 1)),
                o_.int_value(o_.at(pid, 4)), dims.size(), o_.size(o_.at(args, 2))};
  for (const uint64_t i : {2, 3}) o_.each(o_.at(args, i), [&](P x) { dims.push_back(o_.int_value(x)); });
  return e;
}

// PROTO, FRAME, MARK, POP, POP_MARK, DUP.
bool Unpickler::stack_op(unsigned char op) {
  switch (op) {
    case 0x80: u8(); return true;
    case 0x95: skip(8); return true;
    case '(':
      if (marks_.size() >= kMaxNesting) throw over_limit(fmt::format("opens more than {} MARKs at once", kMaxNesting));
      marks_.push_back(stack_.size());
      return true;
    case '0': pop(); return true;
    case '1': stack_.truncate(pop_mark()); return true;
    case '2': push(top()); return true;
    default: return false;
  }
}

// Building tuples, lists and dicts.
bool Unpickler::container_op(unsigned char op) {
  switch (op) {
    case '}': push(o_.make(Kind::Dict)); return true;  // EMPTY_DICT
    case ']': push(o_.make(Kind::List)); return true;  // EMPTY_LIST
    case ')': push(Obj::kEmptyTuple); return true;     // EMPTY_TUPLE
    case 't': {                                               // TUPLE
      const size_t m = pop_mark();
      push(tuple_from(m));
      return true;
    }
    case 0x85: case 0x86: case 0x87: {                        // TUPLE1..3
      const size_t n = op - 0x84u;
      need(n);
      push(tuple_from(stack_.size() - n));
      return true;
    }
    case 'l': case 'd': {                                     // LIST, DICT
      const size_t m = pop_mark();
      const P c = o_.make(op == 'l' ? Kind::List : Kind::Dict);
      if (op == 'l') {
        add_items(c, m);
      } else {
        set_items(c, m);
      }
      push(c);
      return true;
    }
    case 's': {                                               // SETITEM
      need(2);
      const size_t m = stack_.size() - 2;
      if (m < floor() + 1) throw bad("the pickle's stack underflows");
      const P d = stack_[m - 1];
      if (o_.kind(d) != Kind::Dict) throw bad("SETITEMS on something that is not a dict");
      add_items(d, m);
      return true;
    }
    case 'u': {                                               // SETITEMS
      const size_t m = pop_mark();
      const P d = below(m);
      if (o_.kind(d) != Kind::Dict) throw bad("SETITEMS on something that is not a dict");
      set_items(d, m);
      return true;
    }
    case 'a': case 'e': {                                     // APPEND, APPENDS
      const size_t m = op == 'a' ? (need(1), stack_.size() - 1) : pop_mark();
      const P l = below(m);
      if (o_.kind(l) != Kind::List) {
        throw bad(op == 'a' ? "APPEND to something that is not a list" : "APPENDS to something that is not a list");
      }
      add_items(l, m);
      return true;
    }
    default: return false;
  }
}

// BINPUT, LONG_BINPUT, MEMOIZE, BINGET, LONG_BINGET.
bool Unpickler::memo_op(unsigned char op) {
  switch (op) {
    case 'q': put(u8()); return true;
    case 'r': put(le(4)); return true;
    case 0x94: put(memo_.size() + sparse_memo_.size()); return true;
    case 'h': push(get(u8())); return true;
    case 'j': push(get(le(4))); return true;
    default: return false;
  }
}

// Strings, bytes, integers, booleans, None, floats.
bool Unpickler::scalar_op(unsigned char op) {
  switch (op) {
    case 'X': case 'T': case 'B': push(str(le(4))); return true;  // BINUNICODE, BINSTRING, BINBYTES
    case 0x8c: case 'U': case 'C': push(str(u8())); return true;  // their SHORT_ forms
    case 0x8d: case 0x8e: push(str(le(8))); return true;          // BINUNICODE8, BINBYTES8
    case 'K': push(integer(u8())); return true;                   // BININT1
    case 'M': push(integer(static_cast<int64_t>(le(2)))); return true;  // BININT2
    case 'J': push(integer(static_cast<int32_t>(le(4)))); return true;  // BININT
    case 0x8a: push(integer(long_int(u8()))); return true;              // LONG1
    case 0x8b: push(integer(long_int(le(4)))); return true;             // LONG4
    case 'I': push(int_line()); return true;                            // INT (protocol 0)
    case 'N': push(Obj::kNone); return true;
    case 0x88: push(Obj::kTrue); return true;                     // NEWTRUE
    case 0x89: push(Obj::kFalse); return true;                    // NEWFALSE
    case 'G': skip(8); push(Obj::kFloat); return true;            // BINFLOAT (value unused)
    default: return false;
  }
}

// GLOBAL, STACK_GLOBAL, REDUCE, NEWOBJ, NEWOBJ_EX, BUILD, BINPERSID.
bool Unpickler::object_op(unsigned char op) {
  switch (op) {
    case 'c': {
      const P mod = line_str();
      push(o_.global(mod, line_str()));
      return true;
    }
    case 0x93: {
      const P name = pop(), mod = pop();
      if (o_.kind(name) != Kind::Str || o_.kind(mod) != Kind::Str) throw bad("STACK_GLOBAL of something that is not a name");
      push(o_.global(mod, name));
      return true;
    }
    case 'R': case 0x81: case 0x92: {
      if (op == 0x92) pop();  // NEWOBJ_EX's kwargs
      const P args = pop(), fn = pop();
      push(reduce(fn, args));
      return true;
    }
    case 'b': pop(); return true;  // BUILD: state (OrderedDict._metadata) unused
    case 'Q': push(persistent(pop())); return true;
    default: return false;
  }
}

Error Unpickler::bad(const std::string& what) const {
  return Error(fmt::format("{}: cannot read data.pkl: {}", file_, what),
               "save the weights with torch.save(model.state_dict(), path)");
}

unsigned char Unpickler::u8() {
  if (pos_ >= b_.size()) throw bad("the pickle ends early");
  return static_cast<unsigned char>(b_[pos_++]);
}

// Steps over n bytes; where they start.
uint64_t Unpickler::skip(uint64_t n) {
  if (n > b_.size() - pos_) throw bad("the pickle ends early");
  const uint64_t at = pos_;
  pos_ += n;
  return at;
}

uint64_t Unpickler::le(int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(u8()) << (8 * i);
  return v;
}

int64_t Unpickler::long_int(uint64_t n) {
  if (n > 8) throw bad("an integer wider than 64 bits");
  const char* s = b_.data() + skip(n);
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(s[i])) << (8 * i);
  if (n > 0 && n < 8 && (static_cast<unsigned char>(s[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);
  return static_cast<int64_t>(v);
}

std::string_view Unpickler::read_line() {
  const size_t e = b_.find('\n', pos_);
  if (e == std::string::npos) throw bad("the pickle ends early");
  const std::string_view s(b_.data() + pos_, e - pos_);
  pos_ = e + 1;
  return s;
}

PickleRef Unpickler::line_str() {
  const std::string_view s = read_line();
  return o_.str(static_cast<uint64_t>(s.data() - b_.data()), s.size());
}

// INT's argument: a decimal line; "01" and "00" are True and False (protocol 0).
PickleRef Unpickler::int_line() {
  const std::string_view line = read_line();
  if (line == "01" || line == "00") return line == "01" ? Obj::kTrue : Obj::kFalse;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
  if (ec != std::errc() || end != line.data() + line.size()) throw bad("an INT that is not a number");
  return integer(v);
}

PickleRef Unpickler::str(uint64_t n) { return o_.str(skip(n), n); }

// The reader's memory beyond the pickle's bytes: the pages its arena, stack and memo have touched.
uint64_t Unpickler::held() const {
  return o_.resident_bytes() + stack_.resident_bytes() + memo_.resident_bytes() +
         kSparseMemoEntryBytes * sparse_memo_.size();
}

// A memo reference (BINGET, DUP) is 1–2 bytes of input for a 4-byte slot, an empty tuple 1 byte
// for a stack slot and an item: without this check a 247-byte pickle asked for gigabytes.
// References are 32-bit: the arena stops at 2^30 objects.
void Unpickler::check_memory() const {
  if (held() > allowed()) {
    throw over_limit(fmt::format("needs more than {:.1f} MB to hold what it builds from {} bytes and {} tensors "
                                 "(the limit is max(1 MiB, the pickle's size) + {} bytes a tensor; a "
                                 "pickle bomb: memo references copied over and over, or values piled up)",
                                 static_cast<double>(allowed()) / 1e6, b_.size(), tensors_, kTensorAllowance));
  }
  if (o_.objects() + 4 >= Obj::kMaxObjects) throw bad("it builds more than 2^30 objects");
}

// A limit torch.save never reaches: a paragraph naming the opcode and its offset.
Error Unpickler::over_limit(const std::string& what) const {
  return Error(fmt::format("{}: cannot read data.pkl: at the opcode 0x{:02x} (byte {}) it {}; torch.save "
                           "never writes such a pickle for a state dict, so the file was made to "
                           "exhaust memory or is not a checkpoint",
                           file_, static_cast<unsigned char>(b_[op_pos_]), op_pos_, what),
               "if it is a real checkpoint, load it in a trusted Python and save the weights again "
               "with torch.save(model.state_dict(), path) or safetensors.torch.save_file");
}

void Unpickler::check_nesting(P container) const {
  if (o_.depth(container) > kMaxNesting) {
    throw over_limit(fmt::format("nests containers more than {} deep (a state dict is under 10)", kMaxNesting));
  }
}

void Unpickler::push(P p) {
  if (stack_.size() >= kMaxStack) {
    throw over_limit(fmt::format("leaves more than {} values on the stack (Python's pickler "
                                 "batches items by 1000)", kMaxStack));
  }
  stack_.push_back(p);
}

void Unpickler::need(size_t n) const {
  if (stack_.size() < floor() + n) throw bad("the pickle's stack underflows");
}

PickleRef Unpickler::pop() {
  need(1);
  P p = stack_.back();
  stack_.pop_back();
  return p;
}

PickleRef Unpickler::top() {
  need(1);
  return stack_.back();
}

// The value under the items [m, end) of the stack: the list or dict they go into.
PickleRef Unpickler::below(size_t m) const {
  if (m < floor() + 1) throw bad("the pickle's stack underflows");
  return stack_[m - 1];
}

void Unpickler::put(uint64_t k) {
  // Picklers number memo entries 0, 1, 2, …: those live in a deque; any other key in a map.
  if (k < memo_.size()) {
    memo_[k] = top();
  } else if (k == memo_.size() && sparse_memo_.empty()) {
    memo_.push_back(top());
  } else {
    sparse_memo_[k] = top();
  }
}

PickleRef Unpickler::get(uint64_t k) {
  if (k < memo_.size()) return memo_[k];
  auto it = sparse_memo_.find(k);
  if (it == sparse_memo_.end()) throw bad(fmt::format("memo entry {} is used before it is set", k));
  return it->second;
}

// Pops the last MARK: where its items start on the stack.
size_t Unpickler::pop_mark() {
  if (marks_.empty()) throw bad("a MARK is missing");
  const size_t m = marks_.back();
  marks_.pop_back();
  return m;
}

// The items [m, end) of the stack as a new tuple, taken off the stack.
PickleRef Unpickler::tuple_from(size_t m) {
  const P t = o_.tuple(stack_, m, stack_.size() - m);
  stack_.truncate(m);
  check_nesting(t);
  return t;
}

void Unpickler::add_items(P l, size_t m) {
  o_.append(l, stack_, m, stack_.size() - m);
  stack_.truncate(m);
  check_nesting(l);
}

void Unpickler::set_items(P d, size_t m) {
  if ((stack_.size() - m) % 2 != 0) throw bad("a dict with an odd number of keys and values");
  add_items(d, m);
}

int64_t Unpickler::as_int(P p, const char* what) const {
  if (o_.kind(p) != Kind::Int && o_.kind(p) != Kind::Bool) throw bad(fmt::format("{} is not an integer", what));
  return o_.int_value(p);
}

// A tensor's size or stride, checked; a list is copied into a tuple, which nothing can change.
PickleRef Unpickler::dims(P p, const char* what) {
  if (o_.kind(p) != Kind::Tuple && o_.kind(p) != Kind::List) throw bad(fmt::format("{} is not a tuple", what));
  if (o_.size(p) > 64) throw bad(fmt::format("{} has more than 64 dimensions", what));
  o_.each(p, [&](P x) { as_int(x, what); });
  if (o_.kind(p) == Kind::Tuple) return p;
  std::vector<P> v;
  o_.each(p, [&](P x) { v.push_back(x); });
  return o_.tuple(v, 0, v.size());
}

// ('storage', torch.<T>Storage, key, location, numel)
PickleRef Unpickler::persistent(P pid) {
  auto item = [&](uint64_t i) { return o_.at(pid, i); };
  if (o_.kind(pid) != Kind::Tuple || o_.size(pid) < 5 || o_.kind(item(0)) != Kind::Str ||
      o_.text(item(0)) != "storage" || o_.kind(item(1)) != Kind::Global || o_.kind(item(2)) != Kind::Str) {
    throw bad("a persistent id that is not a tensor storage");
  }
  const std::string_view type = o_.name(item(1));
  if (storage_item_size(type) == 0) {
    throw UsageError(fmt::format("{}: storage type torch.{} is not supported", file_, type),
                     "save floating-point or integer tensors (float32/64, float16, bfloat16, int8-64, uint8, bool)");
  }
  if (as_int(item(4), "a storage size") < 0) throw bad("a storage of negative size");
  return o_.wrap(Kind::Storage, pid);
}

PickleRef Unpickler::reduce(P fn, P args) {
  if (o_.kind(fn) != Kind::Global) return o_.make(Kind::Opaque);
  const std::string name = fmt::format("{}.{}", o_.module(fn), o_.name(fn));
  const bool tuple_args = o_.kind(args) == Kind::Tuple;
  if (name == "collections.OrderedDict") return o_.make(Kind::Dict);
  // LibTorch's pickler (mtrain's model.pt and shards before issue 44) wraps a typed dict: restore_type_tag(dict, "Dict[str, Tensor]").
  if (name == "torch.jit._pickle.restore_type_tag" && tuple_args && o_.size(args) > 0) return o_.at(args, 0);
  if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") return rebuild_tensor(args);
  if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") {
    if (tuple_args && o_.size(args) > 0 && o_.kind(o_.at(args, 0)) == Kind::Tensor) return o_.at(args, 0);
  }
  return o_.make(Kind::Opaque);
}

// _rebuild_tensor_v2(storage, offset, size, stride, …)
PickleRef Unpickler::rebuild_tensor(P args) {
  if (o_.kind(args) != Kind::Tuple || o_.size(args) < 4 || o_.kind(o_.at(args, 0)) != Kind::Storage) {
    throw bad("a tensor whose arguments are not (storage, offset, size, stride)");
  }
  as_int(o_.at(args, 1), "a storage offset");
  const P shape = dims(o_.at(args, 2), "a tensor size");
  const P stride = dims(o_.at(args, 3), "a tensor stride");
  if (o_.size(shape) != o_.size(stride)) throw bad("a tensor whose size and stride differ in length");
  ++tensors_;
  if (shape == o_.at(args, 2) && stride == o_.at(args, 3)) return o_.wrap(Kind::Tensor, args);
  const P frozen[] = {o_.at(args, 0), o_.at(args, 1), shape, stride};
  return o_.wrap(Kind::Tensor, o_.tuple(frozen, 0, 4));
}

}  // namespace mtrain::trainer
