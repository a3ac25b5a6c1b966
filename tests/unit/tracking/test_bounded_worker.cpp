// The background queue: tasks run in order on one thread, push never waits (a full queue drops),
// stop drains for a bounded grace and then drops the rest.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "lib/tracking/bounded_worker.hpp"

using namespace mtrain::tracking;
using namespace std::chrono_literals;

TEST_CASE("tasks run in order and stop drains the queue", "[tracking][bounded_worker]") {
  std::vector<int> seen;
  BoundedWorker w(16);
  for (int i = 0; i < 10; ++i) CHECK(w.push([&seen, i] { seen.push_back(i); }));
  CHECK(w.stop(5000ms));
  CHECK(seen == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(w.dropped() == 0);
  CHECK_FALSE(w.push([] {}));  // stopped
}

TEST_CASE("a blocked task never blocks push: a full queue drops, stop is bounded", "[tracking][bounded_worker]") {
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> ran{0};
  BoundedWorker w(4);
  CHECK(w.push([gate, &ran] {
    gate.wait();
    ++ran;
  }));
  std::this_thread::sleep_for(50ms);  // the worker holds the first task
  const auto t0 = std::chrono::steady_clock::now();
  int accepted = 0;
  for (int i = 0; i < 100; ++i) accepted += w.push([&ran] { ++ran; }) ? 1 : 0;
  CHECK(std::chrono::steady_clock::now() - t0 < 1s);
  CHECK(accepted == 4);
  CHECK(w.dropped() == 96);
  std::thread releaser([&] {
    std::this_thread::sleep_for(300ms);
    release.set_value();
  });
  const auto t1 = std::chrono::steady_clock::now();
  CHECK_FALSE(w.stop(100ms));  // grace ends with 4 queued: they are dropped
  CHECK(std::chrono::steady_clock::now() - t1 < 2s);
  releaser.join();
  CHECK(ran == 1);
  CHECK(w.dropped() == 100);
}

TEST_CASE("stop calls `waiting` about once a second while a backlog drains", "[tracking][bounded_worker]") {
  // A trainer touches its heartbeat there: the launcher's stall watch (20 s) must not take a rank
  // waiting out MLflow's 30 s grace for a stalled rank.
  BoundedWorker w(16);
  for (int i = 0; i < 5; ++i) w.push([] { std::this_thread::sleep_for(600ms); });
  int calls = 0;
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(w.stop(10000ms, [&] { ++calls; }));
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took >= 2900ms);
  CHECK(took < 8000ms);
  CHECK(calls >= 2);
  CHECK(calls <= 4);
}
