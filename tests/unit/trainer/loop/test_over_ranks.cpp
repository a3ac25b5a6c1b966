// Figures combined over ranks (lib/trainer/loop/over_ranks.cpp), on 3 thread ranks: element-wise
// sums booked under the counter named, and element-wise maxima (the fullest rank's figures).
#include <catch2/catch.hpp>

#include "lib/trainer/loop/over_ranks.hpp"
#include "ranks.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;

TEST_CASE("over_ranks: element-wise sums and maxima over every rank", "[loop][over_ranks]") {
  run_ranks(3, [](Communicator& comm) {
    const double r = comm.rank();
    const at::Device cpu(at::kCPU);
    const auto sum = sum_over_ranks(comm, cpu, {r, 1.0, 0.5 * r}, "all_reduce(metrics)");
    RANK_CHECK(sum == std::vector<double>{3.0, 3.0, 1.5});
    RANK_CHECK(comm.counters().count("all_reduce(metrics)") == 1);
    // Rank 2 is fullest in the first figure, rank 0 in the second.
    const auto mx = max_over_ranks(comm, cpu, {r * 10.0, -r, 7.0});
    RANK_CHECK(mx == std::vector<double>{20.0, 0.0, 7.0});
  });
}

TEST_CASE("over_ranks: no figures gives no maxima, without a collective", "[loop][over_ranks]") {
  run_ranks(2, [](Communicator& comm) {
    const auto mx = max_over_ranks(comm, at::Device(at::kCPU), {});
    RANK_CHECK(mx.empty());
  });
}
