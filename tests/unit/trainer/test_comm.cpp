#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include "ranks.hpp"

using namespace mtrain::trainer;

TEST_CASE("collectives agree with their definition at world 3", "[trainer][comm]") {
  at::set_num_threads(1);
  testing::run_ranks(3, [](Communicator& comm) {
    const int r = comm.rank(), n = comm.world();
    const int64_t k = 5;

    auto t = at::full({7}, static_cast<float>(r + 1));
    comm.all_reduce(t).wait();
    RANK_CHECK(t.eq(6.0f).all().item<bool>());

    // reduce-scatter: rank r's input is (r+1)·[0, 1, …, n·k); chunk r of the sum is 6·chunk.
    auto in = at::arange(n * k, at::kFloat) * static_cast<float>(r + 1);
    auto out = at::empty({k}, at::kFloat);
    comm.reduce_scatter(in, out).wait();
    RANK_CHECK(out.equal(at::arange(r * k, (r + 1) * k, at::kFloat) * 6.0f));

    auto mine = at::full({k}, static_cast<float>(10 * r));
    auto all = at::empty({n * k}, at::kFloat);
    comm.all_gather(mine, all).wait();
    for (int q = 0; q < n; ++q) RANK_CHECK(all.narrow(0, q * k, k).eq(10.0f * q).all().item<bool>());

    auto b = r == 1 ? at::arange(4, at::kFloat) : at::zeros({4}, at::kFloat);
    comm.broadcast(b, 1).wait();
    RANK_CHECK(b.equal(at::arange(4, at::kFloat)));
    comm.barrier();

    // Counters: ring formulas over the full buffer.
    auto c = comm.counters();
    RANK_CHECK(c["all_reduce"].calls == 1);
    RANK_CHECK(c["all_reduce"].payload_bytes == 28);
    RANK_CHECK(c["all_reduce"].wire_bytes == Approx(28.0 * 2 * 2 / 3));
    RANK_CHECK(c["reduce_scatter"].payload_bytes == n * k * 4);
    RANK_CHECK(c["reduce_scatter"].wire_bytes == Approx(n * k * 4.0 * 2 / 3));
    RANK_CHECK(c["all_gather"].wire_bytes == Approx(n * k * 4.0 * 2 / 3));
  });
}

TEST_CASE("a collective whose peer never comes times out with an error", "[trainer][comm]") {
  auto store = compat::make_hash_store();
  // World 2 but only rank 0 joins: the join itself must give up within the timeout.
  CommOptions o;
  o.rank = 0;
  o.world = 2;
  o.timeout = std::chrono::milliseconds(1500);
  o.hostname = "127.0.0.1";
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS(Communicator(store, o));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60));
}
