#include "mtrain/trainer/checkpoint/tensor_archive.hpp"

#include <caffe2/serialize/inline_container.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/core/zip_reader.hpp"
#include "mtrain/trainer/checkpoint/durable_file.hpp"
#include "mtrain/trainer/checkpoint/manifest.hpp"

namespace mtrain::trainer {

namespace {

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
    throw Error(fmt::format("{}: record {}data/{} is missing", path_, zip_->prefix(), key),
                "the file is damaged; save it again (a checkpoint: resume from another one)", kExitFailure);
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
    throw Error(fmt::format("{}: elements [{}, {}) of record {}data/{} lie past its end ({} bytes of {})",
                            path_, offset, offset + numel, zip_->prefix(), key, record_bytes(key),
                            c10::toString(dtype)),
                "the file is truncated or damaged; save it again (a checkpoint: resume from another one)",
                kExitFailure);
  }
  at::Tensor t = at::empty({numel}, at::TensorOptions().dtype(dtype));
  zip_->read_range("data/" + key, static_cast<uint64_t>(offset) * es, static_cast<uint64_t>(numel) * es,
                   t.data_ptr());
  return t;
}

}  // namespace mtrain::trainer
