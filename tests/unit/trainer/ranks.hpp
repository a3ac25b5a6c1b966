#pragma once
// Ranks as threads in one test process, joined over one c10d::HashStore and Gloo.
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lib/trainer/comm/communicator.hpp"

namespace mtrain::trainer::testing {

// Catch2 v2 assertions are not thread-safe: rank threads assert through these.
inline std::mutex& catch_mutex() {
  static std::mutex m;
  return m;
}
#define RANK_CHECK(...)                                                              \
  do {                                                                               \
    std::lock_guard<std::mutex> rank_check_lock(::mtrain::trainer::testing::catch_mutex()); \
    CHECK(__VA_ARGS__);                                                              \
  } while (0)
#define RANK_REQUIRE(...)                                                            \
  do {                                                                               \
    std::lock_guard<std::mutex> rank_check_lock(::mtrain::trainer::testing::catch_mutex()); \
    REQUIRE(__VA_ARGS__);                                                            \
  } while (0)
#define RANK_CHECK_THROWS_WITH(expr, matcher)                                        \
  do {                                                                               \
    std::string rank_what;                                                           \
    try {                                                                            \
      expr;                                                                          \
    } catch (const std::exception& e) {                                              \
      rank_what = e.what();                                                          \
    }                                                                                \
    std::lock_guard<std::mutex> rank_check_lock(::mtrain::trainer::testing::catch_mutex()); \
    CHECK_THAT(rank_what, matcher);                                                  \
  } while (0)

// Runs fn(comm) on `world` threads; rethrows the first failure. Every collective has a 60 s
// timeout and the join itself is bounded, so a broken protocol fails instead of hanging.
// shm_chunk > 0: the ranks' fp32 all-reduces go through shared memory (ShmCollectives) with slots of
// that many floats, as the worker does when every rank is on one host.
inline void run_ranks(int world, const std::function<void(Communicator&)>& fn, int64_t shm_chunk = 0) {
  auto store = compat::make_hash_store();
  std::vector<std::future<void>> done;
  for (int r = 0; r < world; ++r) {
    done.push_back(std::async(std::launch::async, [=, &fn] {
      CommOptions o;
      o.rank = r;
      o.world = world;
      o.timeout = std::chrono::seconds(60);
      o.hostname = "127.0.0.1";
      o.shared_memory = shm_chunk > 0;
      o.shm_chunk_floats = shm_chunk;
      Communicator comm(store, o);
      fn(comm);
    }));
  }
  for (auto& d : done) {
    if (d.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
      throw std::runtime_error("a rank thread did not finish within 120 s");
    }
  }
  for (auto& d : done) d.get();
}

}  // namespace mtrain::trainer::testing
