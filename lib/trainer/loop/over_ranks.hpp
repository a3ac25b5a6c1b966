#pragma once
// Plain figures (losses, counts, byte counts) combined over ranks, for the loop's logs, ledger
// and summary. Collective: every rank calls with a vector of the same length. The tensors live on
// `device`, the communicator's (NCCL reduces only device tensors).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "lib/trainer/comm/communicator.hpp"
#include "lib/trainer/strategy/strategy.hpp"

namespace mtrain::trainer {

// Element-wise sum; `counter` names the collective in the communicator's counters.
std::vector<double> sum_over_ranks(Communicator& comm, const at::Device& device, const std::vector<double>& v,
                                   const std::string& counter);

// Element-wise maximum (the fullest rank's figures).
std::vector<double> max_over_ranks(Communicator& comm, const at::Device& device, const std::vector<double>& v);

// The fullest rank's ledger, each field's maximum over ranks, and the largest `peak` (bytes).
std::pair<MemoryLedger, int64_t> fullest_over_ranks(Communicator& comm, const at::Device& device, const MemoryLedger& m,
                                                    int64_t peak);

}  // namespace mtrain::trainer
