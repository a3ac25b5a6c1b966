#pragma once
// Plain figures (losses, counts, byte counts) combined over ranks, for the loop's logs, ledger
// and summary. Collective: every rank calls with a vector of the same length. The tensors live on
// `device`, the communicator's (NCCL reduces only device tensors).
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "lib/trainer/comm/communicator.hpp"

namespace mtrain::trainer {

// Element-wise sum; `counter` names the collective in the communicator's counters.
std::vector<double> sum_over_ranks(Communicator& comm, const at::Device& device, const std::vector<double>& v,
                                   const std::string& counter);

// Element-wise maximum (the fullest rank's figures).
std::vector<double> max_over_ranks(Communicator& comm, const at::Device& device, const std::vector<double>& v);

}  // namespace mtrain::trainer
