#pragma once
// Gradient buckets: parameters grouped in reverse registration order (the order backward
// produces their gradients) into flat buffers of at most `cap` bytes, the first one smaller so
// its all-reduce starts as early as possible. Each parameter's data and gradient become views
// of its bucket's flat parameter / gradient buffers, so the optimiser and the collective work
// on whole buckets without copies.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace mtrain::trainer {

struct BucketEntry {
  size_t param = 0;    // index into the strategy's parameter list
  int64_t offset = 0;  // element offset in the bucket
  int64_t numel = 0;
};

struct Bucket {
  std::vector<BucketEntry> entries;
  int64_t numel = 0;
  at::Tensor params;  // flat
  at::Tensor grads;   // flat
};

// Plans the buckets for parameter sizes (in registration order) of `element_size` bytes each.
// A parameter larger than a cap gets a bucket of its own.
std::vector<Bucket> plan_buckets(const std::vector<int64_t>& numels, int64_t element_size,
                                 double first_bucket_mb, double bucket_cap_mb);

// Allocates each bucket's flat buffers and rebinds the parameters as views of them (their
// values are copied in; gradients start at zero).
void bind_buckets(std::vector<Bucket>& buckets, std::vector<at::Tensor>& params);

}  // namespace mtrain::trainer
