#pragma once
// Which ranks never reached a collective that failed. Gloo's timeout says only "Timed out
// waiting 300000ms for recv operation to complete" (and c10 adds eleven frames of C++ backtrace);
// it names no rank. The store knows more: every rank that gives up on collective number `seq`
// says so under mtrain/gave_up/<seq>/<rank>; the ranks that were waiting too say it within a
// short grace, a rank that never got there (stopped, hung, dead, or running other code) does not.
// Nothing is paid while collectives succeed: the keys are written only on the way out.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/trainer/comm/compat.hpp"

namespace mtrain::trainer {

struct AbsentRanks {
  bool store_answered = false;  // false: the store (hosted by rank 0) did not answer in time
  std::vector<int> absent;      // ranks (of this group) that did not say they gave up
  std::vector<int> gave_up;     // the other ranks that did
  bool cut_short = false;  // `stopping` said stop before the grace was over: `absent` is not known
};

// Writes this rank's key and waits up to `grace` for the others'. Bounded even when the store's
// host is the rank that stopped (the store calls run on their own thread, left behind then).
// `stopping` (optional, polled): the process is being stopped, so the wait ends at once — a
// launcher tearing the job down after a failure gives a rank only its grace period (5 s by
// default) before SIGKILL, and the rank's own failure record and tracker status come after this.
AbsentRanks find_absent_ranks(const compat::StorePtr& store, int rank, int world, uint64_t seq,
                              std::chrono::milliseconds grace, std::function<bool()> stopping = {});

// The clause for the failure's paragraph, ranks shown as global ranks (`members[r]`, or r when
// `members` is empty): "rank 1 never reached it (rank 0 gave up waiting too)". Pure.
std::string describe_absent_ranks(const AbsentRanks& a, const std::vector<int>& members,
                                  std::chrono::milliseconds grace);

}  // namespace mtrain::trainer
