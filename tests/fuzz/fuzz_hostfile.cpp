// Hostfile text (DeepSpeed format) → inventory.
#include <cctype>
#include <cstring>
#include <set>

#include "fuzz_common.hpp"
#include "lib/topology/hostfile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const std::string in = fuzz::text(data, size);
  fuzz::accepts([&] {
    auto inv = topology::parse_hostfile(in, "hosts.txt");
    std::set<std::string> hosts;
    for (const auto& h : inv) {
      FUZZ_CHECK(!h.host.empty());
      // Only [A-Za-z0-9._:-] reaches ssh argv and sbatch scripts; each host appears once.
      for (char c : h.host) FUZZ_CHECK(std::isalnum(static_cast<unsigned char>(c)) || (c && std::strchr("._:-", c)));
      for (char c : h.user) FUZZ_CHECK(std::isalnum(static_cast<unsigned char>(c)) || (c && std::strchr("._-", c)));
      FUZZ_CHECK(hosts.insert(h.host).second);
      for (size_t i = 1; i < h.slots.size(); ++i) FUZZ_CHECK(h.slots[i - 1] < h.slots[i]);
      for (int s : h.slots) FUZZ_CHECK(s >= 0);
    }
    FUZZ_CHECK(topology::total_slots(inv) >= 0);
  });
  return 0;
}
