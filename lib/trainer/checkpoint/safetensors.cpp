#include "mtrain/trainer/checkpoint/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <c10/util/accumulate.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mtrain/core/error.hpp"
#include "mtrain/trainer/checkpoint/durable_file.hpp"

namespace mtrain::trainer {

namespace {

// The format is little-endian; so are the hosts LibTorch runs on here (x86-64, aarch64).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

// The reference implementation refuses headers above 100 MB; so do we (a corrupt length
// must not make us allocate gigabytes).
constexpr uint64_t kMaxHeader = 100'000'000;

const std::vector<std::pair<std::string, at::ScalarType>>& dtype_table() {
  static const std::vector<std::pair<std::string, at::ScalarType>> t = {
      {"F64", at::kDouble}, {"F32", at::kFloat}, {"F16", at::kHalf},  {"BF16", at::kBFloat16},
      {"I64", at::kLong},   {"I32", at::kInt},   {"I16", at::kShort}, {"I8", at::kChar},
      {"U8", at::kByte},    {"BOOL", at::kBool}};
  return t;
}

std::string supported_names() {
  std::string s;
  for (const auto& [n, t] : dtype_table()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

Error bad_file(const std::string& path, const std::string& what) {
  return Error(fmt::format("{}: not a valid safetensors file: {}", path, what),
               "the file is damaged or was not written by a safetensors writer; export it again "
               "(safetensors.torch.save_file(state_dict, path) in Python)");
}

}  // namespace

std::string safetensors_dtype_name(at::ScalarType t) {
  for (const auto& [n, s] : dtype_table())
    if (s == t) return n;
  throw Error(fmt::format("dtype {} has no safetensors name mtrain writes", c10::toString(t)),
              "supported: " + supported_names(), kExitFailure);
}

at::ScalarType safetensors_dtype(const std::string& name) {
  for (const auto& [n, s] : dtype_table())
    if (n == name) return s;
  throw Error(fmt::format("safetensors dtype '{}' is not supported", name),
              "mtrain reads " + supported_names() + "; convert the tensor in Python first");
}

uint64_t write_safetensors(DurableWriter& out, const std::vector<ArchiveEntry>& entries,
                           const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = m;
  }
  uint64_t offset = 0;
  for (const auto& e : entries) {
    if (e.name == "__metadata__" || header.contains(e.name)) {
      throw Error(fmt::format("internal: tensor name '{}' is reserved or repeated", e.name), "", kExitFailure);
    }
    const uint64_t bytes = static_cast<uint64_t>(c10::multiply_integers(e.shape)) * c10::elementSize(e.dtype);
    header[e.name] = {{"dtype", safetensors_dtype_name(e.dtype)},
                      {"shape", e.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // The byte buffer starts 8-byte aligned (8 + header length), as the reference writer does.
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t n = text.size();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xff);
  out.write(len, 8);
  out.write(text.data(), text.size());
  for (const auto& e : entries) {
    at::Tensor t = e.data();
    if (!t.defined() || t.numel() != c10::multiply_integers(e.shape) || t.scalar_type() != e.dtype) {
      throw Error(fmt::format("internal: tensor '{}' does not match its declared dtype/shape", e.name),
                  "", kExitFailure);
    }
    t = t.device().is_cpu() ? t.contiguous() : t.to(at::kCPU).contiguous();
    out.write(t.data_ptr(), t.nbytes());
  }
  out.throw_if_failed();
  return out.bytes();
}

bool looks_like_safetensors(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char b[9];
  const ssize_t r = ::pread(fd, b, 9, 0);
  ::close(fd);
  if (r != 9) return false;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(b[i]) << (8 * i);
  return n >= 2 && n <= kMaxHeader && b[8] == '{';
}

SafetensorsReader::SafetensorsReader(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    const int e = errno;
    throw Error(fmt::format("{}: cannot open ({})", path_, std::strerror(e)), "check the path");
  }
  struct stat st {};
  ::fstat(fd_, &st);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  auto fail = [&](const std::string& what) {
    ::close(fd_);
    fd_ = -1;
    return bad_file(path_, what);
  };
  if (size < 8) throw fail(fmt::format("the file has {} bytes, fewer than the 8-byte header length", size));
  unsigned char len[8];
  if (::pread(fd_, len, 8, 0) != 8) throw fail("cannot read the header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(len[i]) << (8 * i);
  if (n > kMaxHeader) throw fail(fmt::format("the header length {} is above the 100 MB limit", n));
  if (8 + n > size) {
    throw fail(fmt::format("the header length {} runs past the end of the file ({} bytes)", n, size));
  }
  std::string text(n, '\0');
  if (n > 0 && ::pread(fd_, text.data(), n, 8) != static_cast<ssize_t>(n)) throw fail("cannot read the header");
  data_start_ = 8 + n;
  const uint64_t data_bytes = size - data_start_;

  nlohmann::ordered_json h;
  try {
    h = nlohmann::ordered_json::parse(text);
  } catch (const std::exception& ex) {
    std::string what = ex.what();
    throw fail("the header is not JSON (" + what.substr(0, what.find('\n')) + ")");
  }
  if (!h.is_object()) throw fail("the header is not a JSON object");
  for (const auto& [name, v] : h.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) throw fail("__metadata__ is not an object of strings");
      for (const auto& [k, s] : v.items()) {
        if (!s.is_string()) throw fail(fmt::format("__metadata__ value '{}' is not a string", k));
        metadata_[k] = s.get<std::string>();
      }
      continue;
    }
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets")) {
      throw fail(fmt::format("tensor '{}' lacks dtype, shape or data_offsets", name));
    }
    SafetensorsTensor t;
    t.name = name;
    const auto& dt = v["dtype"];
    if (!dt.is_string()) throw fail(fmt::format("tensor '{}': dtype is not a string", name));
    try {
      t.dtype = safetensors_dtype(dt.get<std::string>());
    } catch (const Error& e) {
      throw fail(fmt::format("tensor '{}': {} (mtrain reads {})", name, e.message(), supported_names()));
    }
    const auto& sh = v["shape"];
    if (!sh.is_array()) throw fail(fmt::format("tensor '{}': shape is not a list", name));
    for (const auto& d : sh) {
      if (!d.is_number_unsigned()) throw fail(fmt::format("tensor '{}': shape {} has a non-integer or negative size", name, sh.dump()));
      t.shape.push_back(d.get<int64_t>());
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      throw fail(fmt::format("tensor '{}': data_offsets is not [begin, end]", name));
    }
    t.begin = off[0].get<uint64_t>();
    t.end = off[1].get<uint64_t>();
    if (t.end < t.begin || t.end > data_bytes) {
      throw fail(fmt::format("tensor '{}': data_offsets [{}, {}] lie outside the {} bytes of data",
                             name, t.begin, t.end, data_bytes));
    }
    const uint64_t want = static_cast<uint64_t>(c10::multiply_integers(t.shape)) * c10::elementSize(t.dtype);
    if (t.end - t.begin != want) {
      throw fail(fmt::format("tensor '{}': shape [{}] of {} needs {} bytes, data_offsets give {}", name,
                             fmt::join(t.shape, ", "), dt.get<std::string>(), want, t.end - t.begin));
    }
    index_[name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
  // The buffer must be covered exactly: sorted by begin, each tensor starts where the last ended.
  std::vector<const SafetensorsTensor*> by_offset;
  for (const auto& t : tensors_) by_offset.push_back(&t);
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [](const auto* a, const auto* b) { return a->begin < b->begin; });
  uint64_t at = 0;
  for (const auto* t : by_offset) {
    if (t->begin != at) {
      throw fail(fmt::format("tensor '{}' starts at byte {} of the data, but the previous tensor ends "
                             "at {} ({})", t->name, t->begin, at, t->begin < at ? "they overlap" : "a hole"));
    }
    at = t->end;
  }
  if (at != data_bytes) {
    throw fail(fmt::format("the tensors cover {} bytes of data but the file holds {} after the header "
                           "(truncated or trailing bytes)", at, data_bytes));
  }
}

SafetensorsReader::~SafetensorsReader() {
  if (fd_ >= 0) ::close(fd_);
}

const SafetensorsTensor* SafetensorsReader::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

at::Tensor SafetensorsReader::read(const std::string& name, int64_t offset, int64_t numel) const {
  const SafetensorsTensor* t = find(name);
  if (t == nullptr) throw Error(fmt::format("{}: no tensor '{}'", path_, name), "", kExitFailure);
  const int64_t total = c10::multiply_integers(t->shape);
  if (offset < 0 || numel < 0 || offset + numel > total) {
    throw Error(fmt::format("{}: elements [{}, {}) of '{}' are outside its {} elements", path_, offset,
                            offset + numel, name, total), "", kExitFailure);
  }
  const uint64_t es = c10::elementSize(t->dtype);
  at::Tensor out = at::empty({numel}, at::TensorOptions().dtype(t->dtype));
  char* p = static_cast<char*>(out.data_ptr());
  const uint64_t begin = data_start_ + t->begin + static_cast<uint64_t>(offset) * es;
  const uint64_t bytes = static_cast<uint64_t>(numel) * es;
  uint64_t done = 0;
  while (done < bytes) {
    const ssize_t r = ::pread(fd_, p + done, bytes - done, static_cast<off_t>(begin + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      throw Error(fmt::format("{}: reading tensor '{}' failed ({})", path_, name,
                              r < 0 ? std::strerror(errno) : "unexpected end of file"),
                  "the file changed or is damaged", kExitFailure);
    }
    done += static_cast<uint64_t>(r);
  }
  return out;
}

}  // namespace mtrain::trainer
