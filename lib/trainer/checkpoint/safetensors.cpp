#include "lib/trainer/checkpoint/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <c10/util/accumulate.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/error.hpp"
#include "lib/core/untrusted_file.hpp"
#include "lib/trainer/checkpoint/safetensors_header.hpp"
#include "lib/trainer/checkpoint/durable_file.hpp"

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
  throw RuntimeFailure(fmt::format("dtype {} has no safetensors name mtrain writes", c10::toString(t)),
                       "supported: " + supported_names());
}

at::ScalarType safetensors_dtype(const std::string& name) {
  for (const auto& [n, s] : dtype_table())
    if (n == name) return s;
  throw UsageError(fmt::format("safetensors dtype '{}' is not supported", name),
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
      throw RuntimeFailure(fmt::format("internal: tensor name '{}' is reserved or repeated", e.name), "");
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
      throw RuntimeFailure(fmt::format("internal: tensor '{}' does not match its declared dtype/shape", e.name), "");
    }
    t = t.device().is_cpu() ? t.contiguous() : t.to(at::kCPU).contiguous();
    out.write(t.data_ptr(), t.nbytes());
  }
  out.throw_if_failed();
  return out.bytes();
}

bool looks_like_safetensors(const std::string& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return false;
  unsigned char b[9];
  const ssize_t r = ::pread(fd.get(), b, 9, 0);
  if (r != 9) return false;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(b[i]) << (8 * i);
  return n >= 2 && n <= kMaxHeader && b[8] == '{';
}

SafetensorsReader::SafetensorsReader(std::string path) : path_(std::move(path)) {
  std::string why;
  UntrustedFile f = open_untrusted(path_, &why);  // a FIFO or device is refused, never blocks
  if (f.fd() < 0) {
    throw UsageError(fmt::format("{}: the safetensors file {}", path_, why),
                     "model.init names a .safetensors file, a torch.save file or a checkpoint folder");
  }
  const uint64_t size = f.size();
  if (size < 8) throw bad_file(path_, fmt::format("the file has {} bytes, fewer than the 8-byte header length", size));
  unsigned char len[8];
  if (!f.pread_exact(len, 8, 0)) throw bad_file(path_, "cannot read the header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(len[i]) << (8 * i);
  if (n > kMaxHeader) throw bad_file(path_, fmt::format("the header length {} is above the 100 MB limit", n));
  if (n > size - 8) {
    throw bad_file(path_, fmt::format("the header length {} runs past the end of the file ({} bytes)", n, size));
  }
  std::string text(n, '\0');
  if (n > 0 && !f.pread_exact(text.data(), n, 8)) throw bad_file(path_, "cannot read the header (the file shrank)");
  data_start_ = 8 + n;
  SafetensorsHeader h = parse_safetensors_header(text, size - data_start_, path_);
  text = std::string();
  metadata_ = std::move(h.metadata);
  tensors_.reserve(h.tensors.size());
  for (auto& e : h.tensors) {
    SafetensorsTensor t;
    t.name = std::move(e.name);
    t.dtype = safetensors_dtype(e.dtype);
    t.shape = std::move(e.shape);
    t.begin = e.begin;
    t.end = e.end;
    index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
  fd_.reset(f.release());
}

SafetensorsReader::~SafetensorsReader() = default;

const SafetensorsTensor* SafetensorsReader::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

at::Tensor SafetensorsReader::read(const std::string& name, int64_t offset, int64_t numel) const {
  const SafetensorsTensor* t = find(name);
  if (t == nullptr) throw RuntimeFailure(fmt::format("{}: no tensor '{}'", path_, name), "");
  const int64_t total = c10::multiply_integers(t->shape);
  if (offset < 0 || numel < 0 || offset + numel > total) {
    throw RuntimeFailure(fmt::format("{}: elements [{}, {}) of '{}' are outside its {} elements", path_, offset,
                                     offset + numel, name, total),
                         "");
  }
  const uint64_t es = c10::elementSize(t->dtype);
  at::Tensor out = at::empty({numel}, at::TensorOptions().dtype(t->dtype));
  char* p = static_cast<char*>(out.data_ptr());
  const uint64_t begin = data_start_ + t->begin + static_cast<uint64_t>(offset) * es;
  const uint64_t bytes = static_cast<uint64_t>(numel) * es;
  uint64_t done = 0;
  while (done < bytes) {
    const ssize_t r = ::pread(fd_.get(), p + done, bytes - done, static_cast<off_t>(begin + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      throw RuntimeFailure(fmt::format("{}: reading tensor '{}' failed ({})", path_, name,
                                       r < 0 ? std::strerror(errno) : "unexpected end of file"),
                           "the file changed or is damaged");
    }
    done += static_cast<uint64_t>(r);
  }
  return out;
}

}  // namespace mtrain::trainer
