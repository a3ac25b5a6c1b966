#include "lib/trainer/checkpoint/safetensors_header.hpp"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/error.hpp"

namespace mtrain::trainer {

namespace {

constexpr size_t kMaxDims = 64;  // LibTorch's own limit on tensor dimensions

struct Invalid {
  std::string what;
};

// States of the stream: the root object (depth 1), a tensor or __metadata__ object (depth 2),
// a shape or data_offsets list (depth 3). An unknown key of a tensor is skipped whole only when
// its value is a scalar: nothing in the format nests there, so a nested one is refused.
class Handler final : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit Handler(SafetensorsHeader& h) : h_(h) {}

  bool null() override { return scalar("null"); }
  bool boolean(bool) override { return scalar("a boolean"); }
  bool number_integer(number_integer_t v) override {
    if (v < 0) return in_list() ? bad_number("negative") : scalar("a number");
    return number_unsigned(static_cast<number_unsigned_t>(v));
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (depth_ == 3) {
      if (list_ == List::Shape) {
        if (cur_.shape.size() >= kMaxDims) fail(fmt::format("tensor '{}': shape has more than {} dimensions", cur_.name, kMaxDims));
        if (v > static_cast<uint64_t>(INT64_MAX)) bad_number("too large");
        cur_.shape.push_back(static_cast<int64_t>(v));
        return true;
      }
      if (offsets_n_ >= 2) fail(fmt::format("tensor '{}': data_offsets is not [begin, end]", cur_.name));
      (offsets_n_++ == 0 ? cur_.begin : cur_.end) = v;
      return true;
    }
    return scalar("a number");
  }
  bool number_float(number_float_t, const string_t&) override {
    return in_list() ? bad_number("not an integer") : scalar("a number");
  }
  bool string(string_t& s) override {
    if (depth_ == 2 && in_metadata_) {
      if (!h_.metadata.emplace(key_, s).second) fail(fmt::format("__metadata__ key '{}' appears twice", key_));
      return true;
    }
    if (depth_ == 2 && key_ == "dtype") {
      if (has_dtype_) fail(fmt::format("tensor '{}': dtype given twice", cur_.name));
      has_dtype_ = true;
      cur_.dtype = s;
      return true;
    }
    if (depth_ == 2) return true;  // an unknown key with a string value: ignored
    if (depth_ == 1) fail(fmt::format("tensor '{}' is a string, not an object", key_));
    if (depth_ == 3) fail(fmt::format("tensor '{}': {} holds a string", cur_.name, list_name()));
    fail("the header is not a JSON object");
    return false;
  }
  bool binary(binary_t&) override { return scalar("binary"); }
  bool start_object(std::size_t) override {
    if (depth_ == 0) {
      depth_ = 1;
      return true;
    }
    if (depth_ == 1) {
      depth_ = 2;
      if (key_ == "__metadata__") {
        if (seen_metadata_) fail("__metadata__ appears twice");
        seen_metadata_ = in_metadata_ = true;
        return true;
      }
      if (!names_.insert(key_).second) fail(fmt::format("tensor '{}' appears twice", key_));
      cur_ = SafetensorsHeaderEntry{};
      cur_.name = key_;
      has_dtype_ = has_shape_ = false;
      offsets_n_ = -1;
      return true;
    }
    if (depth_ == 2 && in_metadata_) fail(fmt::format("__metadata__ value '{}' is not a string", key_));
    fail(fmt::format("tensor '{}': '{}' holds an object (the format nests no deeper)", cur_.name, key_));
    return false;
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool end_object() override {
    if (depth_ == 2 && !in_metadata_) {
      if (!has_dtype_ || !has_shape_ || offsets_n_ < 0) {
        fail(fmt::format("tensor '{}' lacks dtype, shape or data_offsets", cur_.name));
      }
      if (offsets_n_ != 2) fail(fmt::format("tensor '{}': data_offsets is not [begin, end]", cur_.name));
      h_.tensors.push_back(std::move(cur_));
    }
    in_metadata_ = in_metadata_ && depth_ != 2;
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 2 && !in_metadata_ && (key_ == "shape" || key_ == "data_offsets")) {
      depth_ = 3;
      if (key_ == "shape") {
        if (has_shape_) fail(fmt::format("tensor '{}': shape given twice", cur_.name));
        has_shape_ = true;
        list_ = List::Shape;
      } else {
        if (offsets_n_ >= 0) fail(fmt::format("tensor '{}': data_offsets given twice", cur_.name));
        offsets_n_ = 0;
        list_ = List::Offsets;
      }
      return true;
    }
    if (depth_ == 0) fail("the header is not a JSON object");
    if (depth_ == 1) fail(fmt::format("tensor '{}' is a list, not an object", key_));
    if (depth_ == 2 && in_metadata_) fail(fmt::format("__metadata__ value '{}' is not a string", key_));
    if (depth_ == 3) fail(fmt::format("tensor '{}': {} holds a list (lists nest no deeper)", cur_.name, list_name()));
    fail(fmt::format("tensor '{}': '{}' holds a list", cur_.name, key_));
    return false;
  }
  bool end_array() override {
    depth_ = 2;
    return true;
  }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& ex) override {
    std::string what = ex.what();
    fail(fmt::format("the header is not JSON at byte {} ({})", pos, what.substr(0, what.find('\n'))));
    return false;
  }

 private:
  enum class List { Shape, Offsets };
  [[noreturn]] static void fail(const std::string& what) { throw Invalid{what}; }
  bool in_list() const { return depth_ == 3; }
  const char* list_name() const { return list_ == List::Shape ? "shape" : "data_offsets"; }
  bool bad_number(const char* why) {
    fail(fmt::format("tensor '{}': {} holds a number that is {}", cur_.name, list_name(), why));
    return false;
  }
  bool scalar(const char* what) {
    if (depth_ == 2 && in_metadata_) fail(fmt::format("__metadata__ value '{}' is not a string", key_));
    if (depth_ == 2 && key_ == "dtype") fail(fmt::format("tensor '{}': dtype is not a string", cur_.name));
    if (depth_ == 2) return true;  // an unknown key: ignored
    if (depth_ == 1) fail(fmt::format("tensor '{}' is {}, not an object", key_, what));
    if (depth_ == 3) fail(fmt::format("tensor '{}': {} holds {}", cur_.name, list_name(), what));
    fail("the header is not a JSON object");
    return false;
  }

  SafetensorsHeader& h_;
  int depth_ = 0;
  bool in_metadata_ = false, seen_metadata_ = false;
  std::string key_;
  SafetensorsHeaderEntry cur_;
  bool has_dtype_ = false, has_shape_ = false;
  int offsets_n_ = -1;
  List list_ = List::Shape;
  std::unordered_set<std::string> names_;
};

}  // namespace

uint64_t safetensors_item_size(const std::string& d) {
  if (d == "F64" || d == "I64") return 8;
  if (d == "F32" || d == "I32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL") return 1;
  return 0;
}

SafetensorsHeader parse_safetensors_header(const std::string& text, uint64_t data_bytes,
                                           const std::string& path) {
  auto bad = [&](const std::string& what) {
    return Error(fmt::format("{}: not a valid safetensors file: {}", path, what),
                 "the file is damaged or was not written by a safetensors writer; export it again "
                 "(safetensors.torch.save_file(state_dict, path) in Python)");
  };
  SafetensorsHeader h;
  try {
    Handler handler(h);
    nlohmann::json::sax_parse(text, &handler);
  } catch (const Invalid& e) {
    throw bad(e.what);
  }
  for (const auto& t : h.tensors) {
    const uint64_t item = safetensors_item_size(t.dtype);
    if (item == 0) {
      throw bad(fmt::format("tensor '{}': safetensors dtype '{}' is not supported (mtrain reads F64, "
                            "F32, F16, BF16, I64, I32, I16, I8, U8, BOOL; convert the tensor in "
                            "Python first)", t.name, t.dtype));
    }
    if (t.end < t.begin || t.end > data_bytes) {
      throw bad(fmt::format("tensor '{}': data_offsets [{}, {}] lie outside the {} bytes of data",
                            t.name, t.begin, t.end, data_bytes));
    }
    // shape × item size without overflow: a product above the data's size is already wrong.
    uint64_t want = item;
    bool over = false;
    for (int64_t d : t.shape) over = over || __builtin_mul_overflow(want, static_cast<uint64_t>(d), &want);
    if (over || t.end - t.begin != want) {
      throw bad(fmt::format("tensor '{}': shape [{}] of {} needs {} bytes, data_offsets give {}", t.name,
                            fmt::join(t.shape, ", "), t.dtype, over ? std::string("more than 2^64")
                                                                    : std::to_string(want),
                            t.end - t.begin));
    }
  }
  // The buffer must be covered exactly: sorted by begin, each tensor starts where the last ended.
  std::vector<const SafetensorsHeaderEntry*> by_offset;
  by_offset.reserve(h.tensors.size());
  for (const auto& t : h.tensors) by_offset.push_back(&t);
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [](const auto* a, const auto* b) { return a->begin < b->begin; });
  uint64_t at = 0;
  for (const auto* t : by_offset) {
    if (t->begin != at) {
      throw bad(fmt::format("tensor '{}' starts at byte {} of the data, but the previous tensor ends "
                            "at {} ({})", t->name, t->begin, at, t->begin < at ? "they overlap" : "a hole"));
    }
    at = t->end;
  }
  if (at != data_bytes) {
    throw bad(fmt::format("the tensors cover {} bytes of data but the file holds {} after the header "
                          "(truncated or trailing bytes)", at, data_bytes));
  }
  return h;
}

}  // namespace mtrain::trainer
