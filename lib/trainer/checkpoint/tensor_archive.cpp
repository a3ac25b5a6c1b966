#include "lib/trainer/checkpoint/tensor_archive.hpp"

#include <caffe2/serialize/inline_container.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/zip_reader.hpp"
#include "lib/trainer/checkpoint/durable_file.hpp"
#include "lib/trainer/checkpoint/manifest.hpp"

namespace mtrain::trainer {

namespace {

// The storage class torch.save names for a dtype (torch.FloatStorage, …): what both Python
// unpicklers accept, PyTorch ≥ 2.6's weights-only one included.
const char* storage_class(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "FloatStorage";
    case at::kDouble: return "DoubleStorage";
    case at::kHalf: return "HalfStorage";
    case at::kBFloat16: return "BFloat16Storage";
    case at::kLong: return "LongStorage";
    case at::kInt: return "IntStorage";
    case at::kShort: return "ShortStorage";
    case at::kChar: return "CharStorage";
    case at::kByte: return "ByteStorage";
    case at::kBool: return "BoolStorage";
    default: return nullptr;
  }
}

// data.pkl as Python's torch.save writes a state dict (pickle protocol 2): an
// collections.OrderedDict whose values are torch._utils._rebuild_tensor_v2(storage, 0, size,
// stride, False, OrderedDict()) over persistent ids ('storage', torch.<T>Storage, key, 'cpu',
// numel), storage i under key "i". Written by hand because LibTorch's pickler tags the dict with
// torch.jit._pickle.restore_type_tag, a global PyTorch ≥ 2.6's torch.load refuses by default
// (weights_only=True): every user's first torch.load(model.pt) failed. Only globals that
// unpickler allows appear here, and 1.13's unpickler reads them too.
class StateDictPickler {
 public:
  std::string take(const std::vector<ArchiveEntry>& entries) {
    op(0x80), op(2);                                   // PROTO 2
    global(kOrderedDict, "collections", "OrderedDict");
    op(')'), op('R');                                  // OrderedDict()
    for (size_t i = 0; i < entries.size(); ++i) {
      // Python's pickler batches SETITEMS by 1000; mtrain's reader bounds the stack likewise.
      if (i % 1000 == 0) op('(');
      const ArchiveEntry& e = entries[i];
      const char* cls = storage_class(e.dtype);
      if (cls == nullptr) {
        throw RuntimeFailure(fmt::format("internal: tensor '{}' has dtype {}, which torch.save's format has no "
                                         "storage class for",
                                         e.name, c10::toString(e.dtype)),
                             "");
      }
      text(e.name);
      global(kRebuild, "torch._utils", "_rebuild_tensor_v2");
      op('(');
      op('(');                                         // the persistent id
      text("storage");
      global(std::string(cls), "torch", cls);
      text(std::to_string(i));
      text("cpu");
      integer(numel_of(e.shape));
      op('t'), op('Q');                                // TUPLE, BINPERSID
      integer(0);                                      // storage offset
      ints(e.shape);
      ints(c10::contiguous_strides(e.shape));
      op(0x89);                                        // requires_grad False
      global(kOrderedDict, "collections", "OrderedDict");
      op(')'), op('R');                                // backward hooks: OrderedDict()
      op('t'), op('R');
      if (i % 1000 == 999 || i + 1 == entries.size()) op('u');  // SETITEMS
    }
    op('.');
    return std::move(b_);
  }

 private:
  static constexpr const char* kOrderedDict = "OrderedDict";
  static constexpr const char* kRebuild = "_rebuild_tensor_v2";

  void op(int c) { b_.push_back(static_cast<char>(c)); }
  void le(uint64_t v, int n) {
    for (int k = 0; k < n; ++k) op(static_cast<int>((v >> (8 * k)) & 0xff));
  }
  void text(const std::string& s) {  // BINUNICODE (the names are UTF-8, as Python's str)
    op('X');
    le(s.size(), 4);
    b_ += s;
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K'), op(static_cast<int>(v));                // BININT1
    } else if (v >= 0 && v < 65536) {
      op('M'), le(static_cast<uint64_t>(v), 2);        // BININT2
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J'), le(static_cast<uint32_t>(static_cast<int32_t>(v)), 4);  // BININT
    } else {
      op(0x8a), op(8), le(static_cast<uint64_t>(v), 8);  // LONG1, 8 bytes two's complement
    }
  }
  void ints(at::IntArrayRef v) {
    op('(');
    for (const int64_t x : v) integer(x);
    op('t');
  }
  // A global once by GLOBAL (memoised), then by BINGET, as Python's pickler does.
  void global(const std::string& key, const char* module, const char* name) {
    const auto it = memo_.find(key);
    if (it != memo_.end()) {
      op('h'), op(static_cast<int>(it->second));
      return;
    }
    op('c');
    b_ += fmt::format("{}\n{}\n", module, name);
    const size_t k = memo_.size();  // < 16 storage classes + 2: one byte
    memo_[key] = k;
    op('q'), op(static_cast<int>(k));
  }

  std::string b_;
  std::map<std::string, size_t> memo_;
};

}  // namespace

ArchiveWritten write_tensor_archive(DurableWriter& out, const std::vector<ArchiveEntry>& entries) {
  const std::string pkl = StateDictPickler().take(entries);
  // Short writes never reach the zip writer (DurableWriter swallows bytes after an error): it
  // would otherwise throw from its destructor. The error surfaces after writeEndOfFile.
  caffe2::serialize::PyTorchStreamWriter zip([&](const void* b, size_t n) -> size_t {
    out.write(b, n);
    return n;
  });
  ArchiveWritten w;
  w.keys.resize(entries.size());
  // torch.save's records: data.pkl, byteorder (PyTorch ≥ 2.1 reads it; 1.13 ignores it), one
  // data/<key> per storage; the writer adds version and the serialization id.
  zip.writeRecord("data.pkl", pkl.data(), pkl.size());
  zip.writeRecord("byteorder", "little", 6);
  for (size_t k = 0; k < entries.size() && !out.failed(); ++k) {
    const ArchiveEntry& e = entries[k];
    w.keys[k] = std::to_string(k);
    at::Tensor t = e.data();
    if (!t.defined() || t.numel() != numel_of(e.shape) || t.scalar_type() != e.dtype) {
      throw RuntimeFailure(fmt::format("internal: tensor '{}' does not match its declared dtype/shape", e.name), "");
    }
    t = t.device().is_cpu() ? t.contiguous() : t.to(at::kCPU).contiguous();
    zip.writeRecord("data/" + w.keys[k], t.data_ptr(), t.nbytes());
  }
  zip.writeEndOfFile();
  out.throw_if_failed();
  w.bytes = out.bytes();
  w.crc32c = out.crc32c();
  return w;
}

ArchiveWritten write_tensor_file(const std::string& path,
                                 const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                 const std::function<void()>& progress) {
  std::vector<ArchiveEntry> entries;
  for (const auto& [name, t] : tensors) {
    const at::Tensor d = t.detach();
    entries.push_back({name, d.scalar_type(), d.sizes().vec(), [d] { return d; }});
  }
  DurableWriter out(path);
  if (progress) out.on_progress(progress);
  ArchiveWritten w = write_tensor_archive(out, entries);
  out.commit();
  return w;
}

ArchiveReader::ArchiveReader(std::string path) : path_(std::move(path)) {
  zip_ = std::make_unique<ZipReader>(path_);
}

ArchiveReader::~ArchiveReader() = default;

std::string ArchiveReader::record(const std::string& name) {
  // data.pkl is metadata: a few bytes per tensor. The bound keeps a hostile archive from making
  // us hold more than the file itself (a deflated data.pkl is inflated to at most that).
  return zip_->read_all(name, std::min<uint64_t>(zip_->file_size(), kMaxPickleBytes));
}

uint64_t ArchiveReader::record_bytes(const std::string& key) const {
  if (zip_->find("data/" + key) == nullptr) {
    throw RuntimeFailure(fmt::format("{}: record {}data/{} is missing", path_, zip_->prefix(), key),
                         "the file is damaged; save it again (a checkpoint: resume from another one)");
  }
  // Tensor data is read in place: a compressed record is refused here, before its declared
  // (inflated) size is trusted for an allocation.
  return zip_->stored("data/" + key).size;
}

at::Tensor ArchiveReader::read(const std::string& key, at::ScalarType dtype, int64_t offset,
                               int64_t numel) {
  const uint64_t es = c10::elementSize(dtype);
  record_bytes(key);  // names a missing record first
  if (offset < 0 || numel < 0 || static_cast<uint64_t>(offset) > record_bytes(key) / es ||
      static_cast<uint64_t>(numel) > record_bytes(key) / es - static_cast<uint64_t>(offset)) {
    throw RuntimeFailure(
        fmt::format("{}: elements [{}, {}) of record {}data/{} lie past its end ({} bytes of {})", path_, offset,
                    offset + numel, zip_->prefix(), key, record_bytes(key), c10::toString(dtype)),
        "the file is truncated or damaged; save it again (a checkpoint: resume from another one)");
  }
  at::Tensor t = at::empty({numel}, at::TensorOptions().dtype(dtype));
  zip_->read_range("data/" + key, static_cast<uint64_t>(offset) * es, static_cast<uint64_t>(numel) * es,
                   t.data_ptr());
  return t;
}

}  // namespace mtrain::trainer
