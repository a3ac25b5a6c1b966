#include "mtrain/trainer/checkpoint/state_dict_pickle.hpp"

#include <charconv>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"

namespace mtrain::trainer {

namespace {

// A pickled value, as far as a state dict needs it. Objects live in the parser's arena and refer
// to each other by plain pointer: a container nested 10^6 deep (a 1 MB pickle) is freed as a flat
// list, where a tree of shared_ptrs recursed once per level in its destructor (SIGSEGV).
// Containers are shared (the memo and the stack refer to the same dict while SETITEMS fills it).
enum class Kind : uint8_t { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, Storage, Tensor, Opaque };
struct Obj {
  Kind kind = Kind::None;
  int64_t i = 0;             // Int/Bool value; Storage/Tensor: index into the parser's tensors
  std::string s, s2;         // Str / Global (module, name)
  std::vector<Obj*> items;   // Tuple, List; Dict: key, value, key, value, …
};
using P = Obj*;

// torch.save writes a storage's class as torch.<T>Storage; its element size, 0 when not read.
uint64_t storage_item_size(const std::string& type_name) {
  static const std::map<std::string, uint64_t> m = {
      {"FloatStorage", 4}, {"DoubleStorage", 8}, {"HalfStorage", 2}, {"BFloat16Storage", 2},
      {"LongStorage", 8},  {"IntStorage", 4},    {"ShortStorage", 2}, {"CharStorage", 1},
      {"ByteStorage", 1},  {"BoolStorage", 1}};
  auto it = m.find(type_name);
  return it == m.end() ? 0 : it->second;
}

class Parser {
 public:
  Parser(const std::string& b, const std::string& file)
      : b_(b), file_(file), budget_(16 * static_cast<uint64_t>(b.size()) + 65536) {}

  const std::vector<PickledTensor>& tensors() const { return tensors_; }
  const PickledTensor& tensor(const Obj* o) const { return tensors_[static_cast<size_t>(o->i)]; }

  P run() {
    while (true) {
      const unsigned char op = u8();
      switch (op) {
        case 0x80: u8(); break;                      // PROTO
        case 0x95: take(8); break;                   // FRAME
        case '}': push(make(Kind::Dict)); break;     // EMPTY_DICT
        case ']': push(make(Kind::List)); break;     // EMPTY_LIST
        case ')': push(make(Kind::Tuple)); break;    // EMPTY_TUPLE
        case '(': marks_.push_back(stack_.size()); break;  // MARK
        case 't': push(seq(Kind::Tuple, pop_mark())); break;
        case 'l': push(seq(Kind::List, pop_mark())); break;
        case 'd': {
          auto d = make(Kind::Dict);
          set_items(d, pop_mark());
          push(d);
          break;
        }
        case 0x85: case 0x86: case 0x87: {           // TUPLE1..3
          const size_t n = op - 0x84u;
          need(n);
          std::vector<P> v(stack_.end() - static_cast<long>(n), stack_.end());
          stack_.resize(stack_.size() - n);
          push(seq(Kind::Tuple, v));
          break;
        }
        case 'q': put(u8()); break;                  // BINPUT
        case 'r': put(le(4)); break;                 // LONG_BINPUT
        case 0x94: put(memo_.size()); break;         // MEMOIZE
        case 'h': push(get(u8())); break;            // BINGET
        case 'j': push(get(le(4))); break;           // LONG_BINGET
        case 'X': push(str(le(4))); break;           // BINUNICODE
        case 0x8c: push(str(u8())); break;           // SHORT_BINUNICODE
        case 0x8d: push(str(le(8))); break;          // BINUNICODE8
        case 'T': push(str(le(4))); break;           // BINSTRING
        case 'U': push(str(u8())); break;            // SHORT_BINSTRING
        case 'B': push(str(le(4))); break;           // BINBYTES
        case 'C': push(str(u8())); break;            // SHORT_BINBYTES
        case 0x8e: push(str(le(8))); break;          // BINBYTES8
        case 'K': push(integer(u8())); break;        // BININT1
        case 'M': push(integer(static_cast<int64_t>(le(2)))); break;  // BININT2
        case 'J': push(integer(static_cast<int32_t>(le(4)))); break;  // BININT
        case 0x8a: push(integer(long_int(u8()))); break;              // LONG1
        case 0x8b: push(integer(long_int(le(4)))); break;             // LONG4
        case 'I': {                                  // INT (protocol 0; "I01" is True)
          const std::string line = read_line();
          if (line == "01" || line == "00") {
            auto o = make(Kind::Bool);
            o->i = line == "01";
            push(o);
          } else {
            int64_t v = 0;
            const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
            if (ec != std::errc() || end != line.data() + line.size()) throw bad("an INT that is not a number");
            push(integer(v));
          }
          break;
        }
        case 'N': push(make(Kind::None)); break;
        case 0x88: case 0x89: {                      // NEWTRUE, NEWFALSE
          auto o = make(Kind::Bool);
          o->i = op == 0x88;
          push(o);
          break;
        }
        case 'G': take(8); push(make(Kind::Float)); break;  // BINFLOAT (value unused)
        case 'c': {                                  // GLOBAL
          auto g = make(Kind::Global);
          g->s = read_line();
          g->s2 = read_line();
          push(g);
          break;
        }
        case 0x93: {                                 // STACK_GLOBAL
          P name = pop(), mod = pop();
          if (name->kind != Kind::Str || mod->kind != Kind::Str) throw bad("STACK_GLOBAL of something that is not a name");
          auto g = make(Kind::Global);
          g->s = mod->s;
          g->s2 = name->s;
          push(g);
          break;
        }
        case 'R': {                                  // REDUCE
          P args = pop(), fn = pop();
          push(reduce(fn, args));
          break;
        }
        case 0x81: {                                 // NEWOBJ
          P args = pop(), cls = pop();
          push(reduce(cls, args));
          break;
        }
        case 0x92: {                                 // NEWOBJ_EX
          pop();
          P args = pop(), cls = pop();
          push(reduce(cls, args));
          break;
        }
        case 'b': pop(); break;                      // BUILD: state (OrderedDict._metadata) unused
        case 's': {                                  // SETITEM
          P v = pop(), k = pop();
          P d = dict_at_top();
          charge(2);
          d->items.push_back(k);
          d->items.push_back(v);
          break;
        }
        case 'u': {                                  // SETITEMS
          auto v = pop_mark();
          set_items(dict_at_top(), v);
          break;
        }
        case 'a': {                                  // APPEND
          P v = pop();
          P l = top();
          if (l->kind != Kind::List) throw bad("APPEND to something that is not a list");
          charge(1);
          l->items.push_back(v);
          break;
        }
        case 'e': {                                  // APPENDS
          auto v = pop_mark();
          P l = top();
          if (l->kind != Kind::List) throw bad("APPENDS to something that is not a list");
          charge(v.size());
          l->items.insert(l->items.end(), v.begin(), v.end());
          break;
        }
        case 'Q': push(persistent(pop())); break;    // BINPERSID
        case '0': pop(); break;                      // POP
        case '1': pop_mark(); break;                 // POP_MARK
        case '2': push(top()); break;                // DUP
        case '.': return pop();                      // STOP
        default:
          throw bad(fmt::format("pickle opcode 0x{:02x} at byte {} is not one torch.save writes for a "
                                "state dict", op, pos_ - 1));
      }
    }
  }

 private:
  Error bad(const std::string& what) const {
    return Error(fmt::format("{}: cannot read data.pkl: {}", file_, what),
                 "save the weights with torch.save(model.state_dict(), path)");
  }
  unsigned char u8() {
    if (pos_ >= b_.size()) throw bad("the pickle ends early");
    return static_cast<unsigned char>(b_[pos_++]);
  }
  std::string take(uint64_t n) {
    if (n > b_.size() - pos_) throw bad("the pickle ends early");
    charge(n / 8);
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t le(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(u8()) << (8 * i);
    return v;
  }
  int64_t long_int(uint64_t n) {
    if (n > 8) throw bad("an integer wider than 64 bits");
    const std::string s = take(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(s[i])) << (8 * i);
    if (n > 0 && n < 8 && (static_cast<unsigned char>(s[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);
    return static_cast<int64_t>(v);
  }
  std::string read_line() {
    const size_t e = b_.find('\n', pos_);
    if (e == std::string::npos) throw bad("the pickle ends early");
    std::string s = b_.substr(pos_, e - pos_);
    pos_ = e + 1;
    return s;
  }
  P str(uint64_t n) {
    auto o = make(Kind::Str);
    o->s = take(n);
    return o;
  }
  P integer(int64_t v) {
    auto o = make(Kind::Int);
    o->i = v;
    return o;
  }
  // Every object, container slot and copied integer is charged to a budget proportional to the
  // pickle's size: memo references (BINGET, DUP) are how a 247-byte pickle asked for gigabytes,
  // and each costs input bytes here as anywhere.
  void charge(uint64_t n) {
    if (n > budget_) {
      throw bad(fmt::format("it builds more than {} values from {} bytes (a pickle bomb: memo "
                            "references copied over and over)", 16 * b_.size() + 65536, b_.size()));
    }
    budget_ -= n;
  }
  P make(Kind k) {
    charge(1);
    arena_.emplace_back();
    arena_.back().kind = k;
    return &arena_.back();
  }
  void push(P p) {
    charge(1);
    stack_.push_back(p);
  }
  void need(size_t n) const {
    const size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() < floor + n) throw bad("the pickle's stack underflows");
  }
  P pop() {
    need(1);
    P p = stack_.back();
    stack_.pop_back();
    return p;
  }
  P top() {
    need(1);
    return stack_.back();
  }
  void put(uint64_t k) {
    charge(1);
    memo_[k] = top();
  }
  P get(uint64_t k) {
    auto it = memo_.find(k);
    if (it == memo_.end()) throw bad(fmt::format("memo entry {} is used before it is set", k));
    return it->second;
  }
  std::vector<P> pop_mark() {
    if (marks_.empty()) throw bad("a MARK is missing");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<P> v(stack_.begin() + static_cast<long>(m), stack_.end());
    stack_.resize(m);
    return v;
  }
  P seq(Kind k, std::vector<P> v) {
    auto o = make(k);
    charge(v.size());
    o->items = std::move(v);
    return o;
  }
  P dict_at_top() {
    P d = top();
    if (d->kind != Kind::Dict) throw bad("SETITEMS on something that is not a dict");
    return d;
  }
  void set_items(const P& d, const std::vector<P>& kv) {
    if (kv.size() % 2 != 0) throw bad("a dict with an odd number of keys and values");
    charge(kv.size());
    d->items.insert(d->items.end(), kv.begin(), kv.end());
  }
  int64_t as_int(const P& p, const char* what) const {
    if (p->kind != Kind::Int && p->kind != Kind::Bool) throw bad(fmt::format("{} is not an integer", what));
    return p->i;
  }
  std::vector<int64_t> ints(const P& p, const char* what) {
    if (p->kind != Kind::Tuple && p->kind != Kind::List) throw bad(fmt::format("{} is not a tuple", what));
    if (p->items.size() > 64) throw bad(fmt::format("{} has more than 64 dimensions", what));
    charge(p->items.size());
    std::vector<int64_t> v;
    for (const auto& x : p->items) v.push_back(as_int(x, what));
    return v;
  }
  // ('storage', torch.<T>Storage, key, location, numel)
  P persistent(const P& pid) {
    if (pid->kind != Kind::Tuple || pid->items.size() < 5 || pid->items[0]->kind != Kind::Str ||
        pid->items[0]->s != "storage" || pid->items[1]->kind != Kind::Global ||
        pid->items[2]->kind != Kind::Str) {
      throw bad("a persistent id that is not a tensor storage");
    }
    const std::string& type = pid->items[1]->s2;
    PickledTensor t;
    t.storage_type = type;
    t.item_size = storage_item_size(type);
    if (t.item_size == 0) {
      throw Error(fmt::format("{}: storage type torch.{} is not supported", file_, type),
                  "save floating-point or integer tensors (float32/64, float16, bfloat16, int8-64, uint8, bool)");
    }
    t.storage_key = pid->items[2]->s;
    t.storage_numel = as_int(pid->items[4], "a storage size");
    if (t.storage_numel < 0) throw bad("a storage of negative size");
    auto o = make(Kind::Storage);
    o->i = static_cast<int64_t>(tensors_.size());
    tensors_.push_back(std::move(t));
    return o;
  }
  P reduce(const P& fn, const P& args) {
    if (fn->kind != Kind::Global) return make(Kind::Opaque);
    const std::string name = fn->s + "." + fn->s2;
    if (name == "collections.OrderedDict") return make(Kind::Dict);
    // LibTorch's pickler (mtrain's model.pt) wraps a typed dict: restore_type_tag(dict, "Dict[str, Tensor]").
    if (name == "torch.jit._pickle.restore_type_tag" && args->kind == Kind::Tuple && !args->items.empty()) {
      return args->items[0];
    }
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
      if (args->kind != Kind::Tuple || args->items.size() < 4 || args->items[0]->kind != Kind::Storage) {
        throw bad("a tensor whose arguments are not (storage, offset, size, stride)");
      }
      PickledTensor t = tensors_[static_cast<size_t>(args->items[0]->i)];
      t.storage_offset = as_int(args->items[1], "a storage offset");
      t.shape = ints(args->items[2], "a tensor size");
      t.stride = ints(args->items[3], "a tensor stride");
      if (t.shape.size() != t.stride.size()) throw bad("a tensor whose size and stride differ in length");
      auto o = make(Kind::Tensor);
      o->i = static_cast<int64_t>(tensors_.size());
      tensors_.push_back(std::move(t));
      return o;
    }
    if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") {
      if (args->kind == Kind::Tuple && !args->items.empty() && args->items[0]->kind == Kind::Tensor) {
        return args->items[0];
      }
    }
    return make(Kind::Opaque);
  }

  const std::string& b_;
  const std::string& file_;
  uint64_t budget_;
  size_t pos_ = 0;
  std::deque<Obj> arena_;
  std::vector<P> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, P> memo_;
  std::vector<PickledTensor> tensors_;
};

bool holds_tensors(const Obj* d) {
  for (size_t i = 1; i < d->items.size(); i += 2)
    if (d->items[i]->kind == Kind::Tensor) return true;
  return false;
}

}  // namespace

PickledStateDict parse_state_dict_pickle(const std::string& pkl, const std::string& file) {
  Parser parser(pkl, file);
  const P root = parser.run();
  const std::string hint =
      "save a dict of tensors: torch.save(model.state_dict(), path) (a dict holding it under one "
      "key such as 'state_dict' or 'model' is also accepted)";
  if (root->kind != Kind::Dict) {
    throw Error(fmt::format("{}: the saved object is not a dict of tensors", file), hint);
  }
  P sd = root;
  PickledStateDict out;
  if (!holds_tensors(root)) {
    std::vector<std::pair<std::string, P>> candidates;
    for (size_t i = 0; i + 1 < root->items.size(); i += 2) {
      const P k = root->items[i], v = root->items[i + 1];
      if (k->kind == Kind::Str && v->kind == Kind::Dict && holds_tensors(v)) candidates.emplace_back(k->s, v);
    }
    if (candidates.empty()) throw Error(fmt::format("{}: the saved dict holds no tensors", file), hint);
    size_t pick = 0;
    if (candidates.size() > 1) {
      pick = candidates.size();
      for (size_t i = 0; i < candidates.size() && pick == candidates.size(); ++i)
        if (candidates[i].first == "state_dict" || candidates[i].first == "model") pick = i;
      if (pick == candidates.size()) {
        std::string keys;
        for (const auto& c : candidates) keys += (keys.empty() ? "'" : ", '") + c.first + "'";
        throw Error(fmt::format("{}: the saved dict holds several dicts of tensors ({}); which one is "
                                "the model is ambiguous", file, keys), hint);
      }
    }
    out.prefix = candidates[pick].first;
    sd = candidates[pick].second;
  }
  std::unordered_set<std::string> names;
  for (size_t i = 0; i + 1 < sd->items.size(); i += 2) {
    const P k = sd->items[i], v = sd->items[i + 1];
    if (k->kind != Kind::Str) continue;
    if (v->kind != Kind::Tensor) {
      if (out.skipped.size() < 100) out.skipped.push_back(k->s);
      continue;
    }
    // A key set twice: the last value wins, as in Python's dict.
    if (!names.insert(k->s).second) {
      for (auto& t : out.tensors)
        if (t.name == k->s) t = parser.tensor(v), t.name = k->s;
      continue;
    }
    PickledTensor t = parser.tensor(v);
    t.name = k->s;
    out.tensors.push_back(std::move(t));
  }
  return out;
}

namespace {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::None: return "None (or a Python object mtrain does not read)";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "string";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Global: return "class or function";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
    default: return "Python object (a class instance, a numpy array, …)";
  }
}

}  // namespace

PickledPair parse_tensor_pair_pickle(const std::string& pkl, const std::string& file,
                                     const std::string& hint) {
  Parser parser(pkl, file);
  const P root = parser.run();
  auto tensor_at = [&](const Obj* v, const std::string& what) {
    if (v->kind != Kind::Tensor) {
      throw Error(fmt::format("the tensors file '{}': {} is a {}, not a torch tensor", file, what,
                              kind_name(v->kind)),
                  "convert it with torch.as_tensor(...) before saving; " + hint);
    }
    return parser.tensor(v);
  };
  PickledPair out;
  if (root->kind == Kind::Dict) {
    const Obj* x = nullptr;
    const Obj* y = nullptr;
    for (size_t i = 0; i + 1 < root->items.size(); i += 2) {
      const Obj* k = root->items[i];
      if (k->kind != Kind::Str) continue;
      if (k->s == "input") x = root->items[i + 1];
      if (k->s == "target") y = root->items[i + 1];
    }
    for (const auto& [key, v] : {std::pair{"input", x}, std::pair{"target", y}}) {
      if (v == nullptr) {
        throw Error(fmt::format("the tensors file '{}' is a dict without the key \"{}\"", file, key), hint);
      }
    }
    out.input = tensor_at(x, "\"input\"");
    out.target = tensor_at(y, "\"target\"");
    return out;
  }
  if ((root->kind == Kind::Tuple || root->kind == Kind::List) && root->items.size() == 2) {
    out.input = tensor_at(root->items[0], "element 0");
    out.target = tensor_at(root->items[1], "element 1");
    return out;
  }
  throw Error(fmt::format("the tensors file '{}' holds a {}{}", file, kind_name(root->kind),
                          root->kind == Kind::Tuple || root->kind == Kind::List
                              ? fmt::format(" of {} elements", root->items.size())
                              : std::string()),
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
