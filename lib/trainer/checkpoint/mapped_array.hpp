#pragma once
// A growable array of trivially copyable values in its own anonymous mapping, for the pickle
// reader's arena and stacks (issue 29 item 2: an untrusted file costs at most about twice its size).
//
// Why not std::vector or std::deque: freed heap memory goes back to the system only as glibc's
// state allows. After a few large loads glibc has raised its mmap threshold and the heap is
// fragmented, so the same parse that measured 1.7× a 27 MB file first in a process measured
// 2.1–2.4× later (the freed arena stayed resident under the result). A mapping of its own is
// unmapped when the array goes, whatever malloc's state; growing it is mremap (the kernel moves
// page tables, no copy), so there is no moment holding both the old and the new block as a
// vector's doubling has. Only touched pages are resident: `resident_bytes` (the high-water mark
// rounded to pages) is what the array costs, which the unpickler charges to its budget.
// Linux-only growth by mremap; elsewhere a copy (mmap, memcpy, munmap).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace mtrain::trainer {

template <class T>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T>, "MappedArray moves its values as bytes");

 public:
  MappedArray() = default;
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;
  MappedArray(MappedArray&& o) noexcept { swap(o); }
  MappedArray& operator=(MappedArray&& o) noexcept {
    MappedArray(std::move(o)).swap(*this);
    return *this;
  }
  ~MappedArray() {
    if (p_ != nullptr) ::munmap(p_, bytes_);
  }

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }
  T* data() { return p_; }
  const T* data() const { return p_; }
  T& back() { return p_[n_ - 1]; }
  const T& back() const { return p_[n_ - 1]; }

  void push_back(const T& v) {
    if (n_ == cap_) grow();
    p_[n_++] = v;
    if (n_ > high_) high_ = n_;
  }
  void pop_back() { --n_; }
  // Shrinks to m values (m <= size()); the pages stay mapped for the values that come next.
  void truncate(size_t m) { n_ = m; }

  // The memory the array holds: every page it has touched.
  size_t resident_bytes() const {
    const size_t page = page_size();
    return (high_ * sizeof(T) + page - 1) / page * page;
  }

 private:
  static size_t page_size() {
    static const size_t p = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    return p;
  }
  void swap(MappedArray& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(cap_, o.cap_);
    std::swap(high_, o.high_);
    std::swap(bytes_, o.bytes_);
  }
  // Doubles the capacity (a first mapping of 16 pages): untouched pages cost no memory, so the
  // doubling costs address space only.
  void grow() {
    const size_t old_bytes = bytes_;
    const size_t bytes = old_bytes == 0 ? 16 * page_size() : 2 * old_bytes;
    void* q = MAP_FAILED;
    if (p_ == nullptr) {
      q = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    } else {
#ifdef __linux__
      q = ::mremap(p_, old_bytes, bytes, MREMAP_MAYMOVE);
#else
      q = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (q != MAP_FAILED) {
        std::memcpy(q, p_, n_ * sizeof(T));
        ::munmap(p_, old_bytes);
      }
#endif
    }
    if (q == MAP_FAILED) throw std::bad_alloc();
    p_ = static_cast<T*>(q);
    bytes_ = bytes;
    cap_ = bytes / sizeof(T);
  }

  T* p_ = nullptr;
  size_t n_ = 0, cap_ = 0, high_ = 0, bytes_ = 0;  // bytes_: the mapping's length
};

}  // namespace mtrain::trainer
