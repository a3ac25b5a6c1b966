#include <catch2/catch.hpp>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "lib/trainer/comm/absent_ranks.hpp"
#include "lib/trainer/comm/exception_text.hpp"
#include "ranks.hpp"

using namespace mtrain::trainer;

namespace {
// Runs fn on every rank of shared-memory worlds 2..5 with 64-float slots, so that the sizes the
// cases use cross chunk boundaries (a chunk holds 64 / world floats of each rank's part).
template <class Fn>
void on_shm_worlds(Fn fn) {
  at::set_num_threads(1);
  for (int world = 2; world <= 5; ++world) {
    INFO("world " << world);
    testing::run_ranks(world, fn, /*shm_chunk=*/64);
  }
}
}  // namespace

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
    // In place: the input is this rank's own slice of the output (the sharded engine's
    // post-update gather).
    auto inplace = at::full({n * k}, -1.0f);
    inplace.narrow(0, r * k, k).fill_(static_cast<float>(10 * r));
    comm.all_gather(inplace.narrow(0, r * k, k), inplace).wait();
    for (int q = 0; q < n; ++q) RANK_CHECK(inplace.narrow(0, q * k, k).eq(10.0f * q).all().item<bool>());

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
    RANK_CHECK(c["all_gather"].wire_bytes == Approx(2 * n * k * 4.0 * 2 / 3));
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

TEST_CASE("shared-memory all-reduce, reduce-scatter and all-gather agree with their definition, worlds 2..5",
          "[trainer][comm]") {
  on_shm_worlds([](Communicator& comm) {
    const int r = comm.rank(), n = comm.world();
    RANK_REQUIRE(comm.uses_shared_memory());
    // Sizes around the 64-float slot: empty, smaller, exact, ragged multi-chunk, and a slice
    // per rank smaller than one element (3 floats over up to 5 ranks).
    std::vector<at::Tensor> ts;
    std::vector<CommHandle> hs;
    for (int64_t len : {0, 3, 63, 64, 65, 1000}) {
      auto t = at::arange(len, at::kFloat) * static_cast<float>(r + 1) + static_cast<float>(r);
      ts.push_back(t);
      hs.push_back(comm.all_reduce(t));  // several in flight: they run in submission order
    }
    for (auto& h : hs) h.wait();
    const float s1 = n * (n + 1) / 2.0f, s0 = n * (n - 1) / 2.0f;
    for (auto& t : ts) {
      auto want = at::arange(t.numel(), at::kFloat) * s1 + s0;
      RANK_CHECK(t.equal(want));
    }
    // Reduce-scatter and all-gather, interleaved with all-reduces in flight, for pieces
    // smaller than, equal to and several times a chunk's part (64 / world floats).
    for (int64_t k : {1, 5, 64 / n, 100}) {
      auto in = at::arange(n * k, at::kFloat) * static_cast<float>(r + 1);
      auto out = at::full({k}, -1.0f);
      auto extra = at::full({3}, 1.0f);
      auto h1 = comm.reduce_scatter(in, out);
      auto h2 = comm.all_reduce(extra);
      auto mine = at::arange(k, at::kFloat) + static_cast<float>(1000 * r);
      auto all = at::full({n * k}, -1.0f);
      auto h3 = comm.all_gather(mine, all);
      h1.wait();
      h2.wait();
      h3.wait();
      RANK_CHECK(out.equal(at::arange(r * k, (r + 1) * k, at::kFloat) * s1));
      RANK_CHECK(extra.eq(static_cast<float>(n)).all().item<bool>());
      for (int q = 0; q < n; ++q)
        RANK_CHECK(all.narrow(0, q * k, k).equal(at::arange(k, at::kFloat) + static_cast<float>(1000 * q)));
      // In place, over several chunks: the input is this rank's slice of the output.
      auto inplace = at::full({n * k}, -1.0f);
      inplace.narrow(0, r * k, k).copy_(mine);
      comm.all_gather(inplace.narrow(0, r * k, k), inplace).wait();
      RANK_CHECK(inplace.equal(all));
    }
    // Doubles (the loop's metrics) still go through Gloo, in step with the shared memory.
    auto d = at::full({2}, static_cast<double>(r), at::kDouble);
    comm.all_reduce(d).wait();
    RANK_CHECK(d[0].item<double>() == s0);
    RANK_CHECK(comm.counters()["all_reduce"].calls == 11);
  });
}

TEST_CASE("shared-memory reduce-scatter from pieces equals the one from the flat buffer they make up, worlds 2..5",
          "[trainer][comm]") {
  on_shm_worlds([](Communicator& comm) {
    const int r = comm.rank(), n = comm.world();
    RANK_REQUIRE(comm.reduce_scatter_takes_pieces());
    // Pieces of ragged sizes with gaps (missing gradients, the padding) that straddle chunk
    // and shard boundaries: 64-float slots, so a chunk holds 64 / n floats of each shard.
    for (int64_t k : {1, 7, 64 / n, 150}) {
      const int64_t total = n * k;
      at::Tensor flat = at::zeros({total}, at::kFloat);
      std::vector<at::Tensor> pieces;
      std::vector<int64_t> offsets;
      int64_t at_ = 1;  // element 0 is a gap
      for (int64_t len = 1; at_ < total; len = len * 3 % 37 + 1) {
        const int64_t take = std::min(len, total - at_);
        at::Tensor p = at::arange(take, at::kFloat) * static_cast<float>(r + 1) + static_cast<float>(at_);
        flat.narrow(0, at_, take).copy_(p);
        pieces.push_back(p);
        offsets.push_back(at_);
        at_ += take + (len % 2);  // every other piece is followed by a gap
      }
      auto want = at::full({k}, -1.0f);
      comm.reduce_scatter(flat, want).wait();
      auto got = at::full({k}, -1.0f);
      comm.reduce_scatter_pieces(pieces, offsets, got).wait();
      RANK_CHECK(got.equal(want));
      // No piece at all: the input is all zeros.
      auto none = at::full({k}, -1.0f);
      comm.reduce_scatter_pieces({}, {}, none).wait();
      RANK_CHECK(none.eq(0.0f).all().item<bool>());
    }
    // Overlapping pieces are refused before anything is sent.
    auto out = at::empty({2}, at::kFloat);
    RANK_CHECK_THROWS_WITH(comm.reduce_scatter_pieces({at::ones({2}), at::ones({2})}, {0, 1}, out),
                           Catch::Contains("piece 1 (2 elements at 1)"));
    // Counted like the flat reduce-scatter: three per k (flat, pieces, none), the refused one not.
    RANK_CHECK(comm.counters()["reduce_scatter"].payload_bytes == Approx(3.0 * n * (1 + 7 + 64 / n + 150) * 4));
  });
}

TEST_CASE("a shared-memory all-reduce whose peer never arrives fails with an error naming it", "[trainer][comm]") {
  auto store = compat::make_hash_store();
  std::vector<std::future<void>> done;
  std::string what;
  std::mutex mu;
  for (int r = 0; r < 2; ++r) {
    done.push_back(std::async(std::launch::async, [&, r] {
      CommOptions o;
      o.rank = r;
      o.world = 2;
      o.timeout = std::chrono::milliseconds(1500);
      o.hostname = "127.0.0.1";
      o.shared_memory = true;
      Communicator comm(store, o);
      if (r == 1) return;  // joins, then never takes part
      auto t = at::ones({10}, at::kFloat);
      try {
        comm.all_reduce(t).wait();
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        what = e.what();
      }
    }));
  }
  for (auto& d : done) REQUIRE(d.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  for (auto& d : done) d.get();
  CHECK_THAT(what, Catch::Contains("rank 1 did not reach step 1"));
}

TEST_CASE("a Gloo collective that times out names the rank that never reached it, without a backtrace",
          "[trainer][comm]") {
  // Issue 17 item 10: Gloo's timeout names no rank and c10 appends eleven frames of C++ backtrace.
  auto store = compat::make_hash_store();
  std::vector<std::future<void>> done;
  std::vector<std::string> what(3);
  for (int r = 0; r < 3; ++r) {
    done.push_back(std::async(std::launch::async, [&, r] {
      CommOptions o;
      o.rank = r;
      o.world = 3;
      o.timeout = std::chrono::milliseconds(1500);
      o.hostname = "127.0.0.1";
      Communicator comm(store, o);
      auto t = at::ones({10}, at::kFloat);
      comm.all_reduce(t).wait();  // one that every rank reaches
      if (r == 2) {
        std::this_thread::sleep_for(std::chrono::seconds(6));  // alive, but never at the next one
        return;
      }
      try {
        comm.all_reduce(t).wait();
      } catch (const std::exception& e) {
        what[static_cast<size_t>(r)] = e.what();
      }
    }));
  }
  for (auto& d : done) REQUIRE(d.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  for (auto& d : done) d.get();
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << what[static_cast<size_t>(r)]);
    CHECK_THAT(what[static_cast<size_t>(r)], Catch::Contains("rank 2 never reached it"));
    CHECK_THAT(what[static_cast<size_t>(r)], Catch::Contains(fmt::format("rank {} was waiting for it too", 1 - r)));
    CHECK_THAT(what[static_cast<size_t>(r)], !Catch::Contains("frame #") && !Catch::Contains("Exception raised from"));
  }
}

TEST_CASE("exception text: a c10-style backtrace is cut off", "[trainer][comm]") {
  CHECK(without_backtrace("[gloo/pair.cc:598] Connection closed by peer [127.0.0.1]:1234\nException raised from "
                          "recvFromPeer at ../x.cpp:1 (most recent call first):\nframe #0: c10::Error::Error()\n") ==
        "[gloo/pair.cc:598] Connection closed by peer [127.0.0.1]:1234");
  CHECK(without_backtrace("plain message\n") == "plain message");
  try {
    TORCH_CHECK(false, "Timed out waiting 1500ms for recv operation to complete");
  } catch (const std::exception& e) {
    CHECK(exception_text(e) == "Timed out waiting 1500ms for recv operation to complete");
  }
}

TEST_CASE("absent ranks: the clause names global ranks of a sub-group", "[trainer][comm]") {
  AbsentRanks a;
  a.store_answered = true;
  a.absent = {1};
  a.gave_up = {0, 2};
  CHECK(describe_absent_ranks(a, {4, 5, 6}, std::chrono::seconds(5)) ==
        "rank 5 never reached it (stopped, hung or busy elsewhere); ranks 4 and 6 were waiting for it too");
  CHECK_THAT(describe_absent_ranks(AbsentRanks{}, {}, std::chrono::seconds(5)),
             Catch::Contains("the store on rank 0 did not answer within 5 s"));
}

TEST_CASE("absent ranks: a rank being stopped does not wait out the grace", "[trainer][comm]") {
  // Rank 1 never says it gave up (dead); rank 0 is being stopped (the launcher's teardown): it
  // must answer within a poll, not after the 5 s grace that outlasts the launcher's own.
  auto store = compat::make_hash_store();
  const auto t0 = std::chrono::steady_clock::now();
  const AbsentRanks a = find_absent_ranks(store, 0, 2, 7, std::chrono::seconds(5), [] { return true; });
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  CHECK(a.cut_short);
  CHECK_THAT(describe_absent_ranks(a, {}, std::chrono::seconds(5)),
             Catch::Contains("which ranks never reached it is unknown: this rank was told to stop"));
  // Not being stopped, the same wait names rank 1 once the grace is over.
  const AbsentRanks b = find_absent_ranks(store, 0, 2, 8, std::chrono::milliseconds(300), [] { return false; });
  CHECK(!b.cut_short);
  CHECK(b.absent == std::vector<int>{1});
}
