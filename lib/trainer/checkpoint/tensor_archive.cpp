#include "mtrain/trainer/checkpoint/tensor_archive.hpp"

#include <caffe2/serialize/inline_container.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/trainer/checkpoint/durable_file.hpp"

namespace mtrain::trainer {

namespace {

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A tensor with the entry's dtype and shape over a storage of the right byte size that owns no
// memory: all the pickler reads is metadata (dtype, sizes, strides, storage size and identity).
at::Tensor stand_in(const ArchiveEntry& e) {
  const int64_t n = numel_of(e.shape);
  const size_t nbytes = static_cast<size_t>(n) * c10::elementSize(e.dtype);
  c10::Storage storage(c10::Storage::use_byte_size_t(), nbytes,
                       c10::DataPtr(nullptr, c10::Device(c10::kCPU)), nullptr, false);
  at::Tensor t = at::empty({0}, at::TensorOptions().dtype(e.dtype));
  t.set_(storage, 0, e.shape, c10::contiguous_strides(e.shape));
  return t;
}

}  // namespace

ArchiveWritten write_tensor_archive(DurableWriter& out, const std::vector<ArchiveEntry>& entries) {
  c10::Dict<std::string, at::Tensor> dict;
  std::vector<at::Tensor> stand_ins;
  for (const auto& e : entries) {
    stand_ins.push_back(stand_in(e));
    dict.insert(e.name, stand_ins.back());
  }
  std::vector<char> pkl;
  torch::jit::Pickler pickler([&](const char* b, size_t n) { pkl.insert(pkl.end(), b, b + n); });
  pickler.protocol();
  pickler.pushIValue(c10::IValue(dict));
  pickler.stop();
  // Every stand-in has its own storage, so the pickler names them "0", "1", … in dict order;
  // check rather than assume, since the record keys must match what the pickle refers to.
  const auto& order = pickler.tensorData();
  if (order.size() != entries.size()) {
    throw Error(fmt::format("internal: the pickler saw {} storages for {} tensors", order.size(),
                            entries.size()), "", kExitFailure);
  }
  std::vector<size_t> entry_of(entries.size());
  for (size_t k = 0; k < order.size(); ++k) {
    size_t i = 0;
    while (i < stand_ins.size() &&
           stand_ins[i].storage().unsafeGetStorageImpl() != order[k].storage().unsafeGetStorageImpl()) {
      ++i;
    }
    if (i == stand_ins.size()) throw Error("internal: a pickled storage matches no tensor", "", kExitFailure);
    entry_of[k] = i;
  }

  // Short writes never reach the zip writer (DurableWriter swallows bytes after an error): it
  // would otherwise throw from its destructor. The error surfaces after writeEndOfFile.
  caffe2::serialize::PyTorchStreamWriter zip([&](const void* b, size_t n) -> size_t {
    out.write(b, n);
    return n;
  });
  ArchiveWritten w;
  w.keys.resize(entries.size());
  zip.writeRecord("data.pkl", pkl.data(), pkl.size());
  for (size_t k = 0; k < order.size() && !out.failed(); ++k) {
    const ArchiveEntry& e = entries[entry_of[k]];
    w.keys[entry_of[k]] = std::to_string(k);
    at::Tensor t = e.data();
    if (!t.defined() || t.numel() != numel_of(e.shape) || t.scalar_type() != e.dtype) {
      throw Error(fmt::format("internal: tensor '{}' does not match its declared dtype/shape", e.name),
                  "", kExitFailure);
    }
    t = t.device().is_cpu() ? t.contiguous() : t.to(at::kCPU).contiguous();
    zip.writeRecord("data/" + std::to_string(k), t.data_ptr(), t.nbytes());
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
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    const int e = errno;
    throw Error(fmt::format("{}: cannot open the checkpoint shard ({})", path_, std::strerror(e)),
                "the checkpoint is incomplete; resume from another one or start afresh", kExitFailure);
  }
  struct stat st {};
  ::fstat(fd_, &st);
  file_size_ = static_cast<int64_t>(st.st_size);
  try {
    zip_ = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path_);
  } catch (const std::exception& ex) {
    std::string what = ex.what();
    what = what.substr(0, what.find('\n'));
    ::close(fd_);
    fd_ = -1;
    throw Error(fmt::format("{}: the checkpoint shard is damaged ({} bytes; {})", path_, file_size_, what),
                "resume from another checkpoint or start afresh", kExitFailure);
  }
}

ArchiveReader::~ArchiveReader() {
  if (fd_ >= 0) ::close(fd_);
}

std::string ArchiveReader::record(const std::string& name) {
  if (!zip_->hasRecord(name)) {
    throw Error(fmt::format("{}: the archive has no record {}", path_, name),
                "the file is not a torch.save archive", kExitFailure);
  }
  auto [data, size] = zip_->getRecord(name);
  return std::string(static_cast<const char*>(data.get()), size);
}

at::Tensor ArchiveReader::read(const std::string& key, at::ScalarType dtype, int64_t offset,
                               int64_t numel) {
  auto it = offsets_.find(key);
  if (it == offsets_.end()) {
    const std::string rec = "data/" + key;
    if (!zip_->hasRecord(rec)) {
      throw Error(fmt::format("{}: record {} is missing", path_, rec),
                  "the checkpoint is damaged; resume from another one", kExitFailure);
    }
    it = offsets_.emplace(key, static_cast<int64_t>(zip_->getRecordOffset(rec))).first;
  }
  const int64_t es = static_cast<int64_t>(c10::elementSize(dtype));
  const int64_t begin = it->second + offset * es, bytes = numel * es;
  if (offset < 0 || numel < 0 || begin + bytes > file_size_) {
    throw Error(fmt::format("{}: record data/{} ends past the end of the file ({} bytes)", path_,
                            key, file_size_),
                "the shard is truncated; resume from another checkpoint", kExitFailure);
  }
  at::Tensor t = at::empty({numel}, at::TensorOptions().dtype(dtype));
  char* p = static_cast<char*>(t.data_ptr());
  int64_t done = 0;
  while (done < bytes) {
    const ssize_t r = ::pread(fd_, p + done, static_cast<size_t>(bytes - done), begin + done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      throw Error(fmt::format("{}: read of record data/{} failed ({})", path_, key,
                              r < 0 ? std::strerror(errno) : "unexpected end of file"),
                  "the shard is damaged or truncated; resume from another checkpoint", kExitFailure);
    }
    done += r;
  }
  return t;
}

}  // namespace mtrain::trainer
