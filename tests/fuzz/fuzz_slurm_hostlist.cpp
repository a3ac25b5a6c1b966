// Slurm hostlists (SLURM_JOB_NODELIST, --nodelist) and count lists (SLURM_TASKS_PER_NODE).
#include "fuzz_common.hpp"
#include "lib/slurm/hostlist.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const std::string in = fuzz::text(data, size);
  fuzz::accepts([&] {
    auto hosts = slurm::expand_hostlist(in);
    FUZZ_CHECK(!hosts.empty());
    for (const auto& h : hosts) FUZZ_CHECK(!h.empty() && h.find_first_of("[],") == std::string::npos);
  });
  fuzz::accepts([&] {
    auto counts = slurm::expand_counts(in, "SLURM_TASKS_PER_NODE");
    FUZZ_CHECK(!counts.empty());
    for (int c : counts) FUZZ_CHECK(c >= 0);
  });
  return 0;
}
