#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "lib/trainer/checkpoint/mapped_array.hpp"

using mtrain::trainer::MappedArray;

namespace {

// Resident kB of the process (VmRSS).
long rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

struct Pair {
  uint64_t a;
  uint32_t b, c;
};

}  // namespace

TEST_CASE("a mapped array keeps its values across growth", "[checkpoint][mapped_array]") {
  MappedArray<Pair> v;
  CHECK(v.empty());
  CHECK(v.resident_bytes() == 0);
  // 10^6 values of 16 bytes: the mapping is moved (mremap) several times on the way.
  for (uint32_t i = 0; i < 1'000'000; ++i) v.push_back({uint64_t{i} * 3, i, ~i});
  REQUIRE(v.size() == 1'000'000);
  bool all = true;
  for (uint32_t i = 0; i < v.size(); ++i) all = all && v[i].a == uint64_t{i} * 3 && v[i].b == i && v[i].c == ~i;
  CHECK(all);
  CHECK(v.back().b == 999'999);
  CHECK(v.data() == &v[0]);
  // The high-water mark, rounded up to pages: 16 MB for 10^6 values.
  CHECK(v.resident_bytes() >= 16'000'000);
  CHECK(v.resident_bytes() < 16'000'000 + 4096 * 16);
}

TEST_CASE("a mapped array shrinks without losing what was touched", "[checkpoint][mapped_array]") {
  MappedArray<uint32_t> v;
  for (uint32_t i = 0; i < 5000; ++i) v.push_back(i);
  const size_t high = v.resident_bytes();
  v.truncate(10);
  v.pop_back();
  CHECK(v.size() == 9);
  CHECK(v.back() == 8);
  CHECK(v.resident_bytes() == high);  // the pages stay resident: what the budget must count
  v.push_back(77);
  CHECK(v[9] == 77);
  MappedArray<uint32_t> w(std::move(v));
  CHECK(w.size() == 10);
  CHECK(w[9] == 77);
  CHECK(v.size() == 0);  // NOLINT(bugprone-use-after-move): the moved-from array is empty
  v = std::move(w);
  CHECK(v.size() == 10);
  CHECK(v[0] == 0);
}

// Why the array maps its own memory (issue 29 item 2): freeing it returns its pages at once,
// whatever state malloc's heap is in.
TEST_CASE("a mapped array's memory is returned when it goes", "[checkpoint][mapped_array]") {
  const long before = rss_kb();
  {
    MappedArray<uint64_t> v;
    for (uint64_t i = 0; i < 8'000'000; ++i) v.push_back(i);  // 64 MB
    CHECK(rss_kb() - before > 60'000);
  }
  CHECK(rss_kb() - before < 4'000);
}
