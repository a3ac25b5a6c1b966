#pragma once
// The unpickler of the state-dict reader (state_dict_pickle.cpp): runs the opcodes torch.save
// writes (protocols 2–5) over a stack of references into the arena of pickle_objects.hpp, one
// function per opcode family, and hands out the tensors it found. Nothing is executed: a global is
// a name, REDUCE of an unknown one an opaque object. Every value, container slot and copied
// integer is charged to a budget of 16 × the pickle's bytes. Torch-free (the fuzz build links it).
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mtrain/core/error.hpp"
#include "mtrain/trainer/checkpoint/pickle_objects.hpp"

namespace mtrain::trainer {

// torch.save writes a storage's class as torch.<T>Storage; its element size, 0 when not read.
uint64_t storage_item_size(std::string_view type_name);

// A tensor as the parse leaves it (views of the pickle, numbers, its dims in a shared vector), so
// that the arena, about three times the pickle's size, is gone before the output is built.
struct TensorEntry {
  std::string_view name, storage_type, storage_key;
  int64_t storage_offset, storage_numel;
  uint64_t dims, ndim;  // shape at dims[dims, dims + ndim), stride after it
};

class Unpickler {
  using P = PickleRef;
  using Kind = PickleKind;
  using Obj = PickleObjects;

 public:
  Unpickler(const std::string& b, const std::string& file)
      : b_(b), file_(file), budget_(16 * static_cast<uint64_t>(b.size()) + 65536), o_(b) {}

  const PickleObjects& objects() const { return o_; }

  P run();

  // The tensor a Tensor value stands for (checked when it was made), out of the arena: its strings
  // as views of the pickle, its shape then stride appended to `dims`.
  TensorEntry entry(std::string_view name, P t, std::vector<int64_t>& dims) const;

 private:
  bool stack_op(unsigned char op);
  bool container_op(unsigned char op);
  bool memo_op(unsigned char op);
  bool scalar_op(unsigned char op);
  bool object_op(unsigned char op);

  Error bad(const std::string& what) const;
  unsigned char u8();
  uint64_t skip(uint64_t n);
  uint64_t le(int n);
  int64_t long_int(uint64_t n);
  std::string_view read_line();
  P line_str();
  P int_line();
  P str(uint64_t n);
  P integer(int64_t v) { return made(o_.integer(v)); }
  void charge(uint64_t n);
  P made(P p);
  void push(P p);
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  void need(size_t n) const;
  P pop();
  P top();
  P below(size_t m) const;
  void put(uint64_t k);
  P get(uint64_t k);
  size_t pop_mark();
  P tuple_from(size_t m);
  void add_items(P l, size_t m);
  void set_items(P d, size_t m);
  int64_t as_int(P p, const char* what) const;
  P dims(P p, const char* what);
  P persistent(P pid);
  P reduce(P fn, P args);
  P rebuild_tensor(P args);

  const std::string& b_;
  const std::string& file_;
  uint64_t budget_;
  size_t pos_ = 0;
  PickleObjects o_;
  std::deque<P> stack_;
  std::vector<size_t> marks_;
  std::deque<P> memo_;
  std::unordered_map<uint64_t, P> sparse_memo_;
};

}  // namespace mtrain::trainer
