#pragma once
// The unpickler of the state-dict reader (state_dict_pickle.cpp): runs the opcodes torch.save
// writes (protocols 2–5) over a stack of references into the arena of pickle_objects.hpp, one
// function per opcode family, and hands out the tensors it found. Nothing is executed: a global is
// a name, REDUCE of an unknown one an opaque object. Torch-free (the fuzz build links it).
//
// Memory (issue 29 item 2: at most 2× the file plus the tensors it really holds): the arena, the
// stack and the memo are mapped arrays whose touched pages are the reader's memory beyond the
// pickle's bytes; after every opcode they must fit max(1 MiB, the pickle's size) plus an allowance
// per tensor built so far (kTensorAllowance, measured below). Two structural limits
// torch.save never comes near refuse the cheap floods at their first excess opcode: containers
// nested deeper than kMaxNesting (a state dict is < 10 deep), and more than kMaxStack values or
// kMaxNesting MARKs live on the stack (Python's pickler batches APPENDS/SETITEMS by 1000).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/core/error.hpp"
#include "lib/trainer/checkpoint/mapped_array.hpp"
#include "lib/trainer/checkpoint/pickle_objects.hpp"

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
  // The structural limits (see the top of this file).
  static constexpr uint64_t kMaxNesting = 256;
  static constexpr size_t kMaxStack = size_t{1} << 16;
  // What one torch.save entry costs the arena and memo, measured on the 10^5-tensor state dict of
  // test_hostile_inputs (PyTorch 2's data.pkl, 8.98 MB: 20.4 MB held at its end, 17.2 MB of it the
  // arena, 3.2 MB the memo): 204 bytes a tensor for 90 bytes of pickle. Credited twice over per
  // completed _rebuild_tensor, so a state dict with shorter names or more objects per entry
  // still loads; a pickle of no tensors is held to its own size.
  static constexpr uint64_t kTensorAllowance = 2 * 204;
  static constexpr uint64_t kFloorBytes = uint64_t{1} << 20;

  Unpickler(const std::string& b, const std::string& file) : b_(b), file_(file), o_(b) {}

  const PickleObjects& objects() const { return o_; }

  P run();

  // The tensor a Tensor value stands for (checked when it was made), out of the arena: its strings
  // as views of the pickle, its shape then stride appended to `dims`.
  TensorEntry entry(std::string_view name, P t, MappedArray<int64_t>& dims) const;

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
  P integer(int64_t v) { return o_.integer(v); }
  uint64_t held() const;
  uint64_t allowed() const { return std::max<uint64_t>(kFloorBytes, b_.size()) + kTensorAllowance * tensors_; }
  void check_memory() const;
  Error over_limit(const std::string& what) const;
  void check_nesting(P container) const;
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
  size_t pos_ = 0, op_pos_ = 0;  // op_pos_: where the opcode being run starts
  uint64_t tensors_ = 0;
  PickleObjects o_;
  MappedArray<P> stack_;
  std::vector<size_t> marks_;  // at most kMaxNesting
  MappedArray<P> memo_;
  std::unordered_map<uint64_t, P> sparse_memo_;
  // A node of sparse_memo_ as glibc's malloc holds it (key, value, next, hash: 32 bytes, in a
  // 48-byte chunk) plus its bucket slot.
  static constexpr uint64_t kSparseMemoEntryBytes = 56;
};

}  // namespace mtrain::trainer
