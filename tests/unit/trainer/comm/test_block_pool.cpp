// The block pool's core, torch-free (mtrain_shm): also run under ASan+UBSan and TSan
// (scripts/sanitize).
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "lib/trainer/comm/block_pool.hpp"

using namespace mtrain::trainer;

namespace {
constexpr size_t MiB = size_t{1} << 20;

// A block owned like LibTorch's DataPtr owns one: given back when destroyed or replaced.
class Held {
 public:
  Held() = default;
  explicit Held(BlockPool::Lease l) : l_(l) {}
  Held(Held&& o) noexcept : l_(std::exchange(o.l_, BlockPool::Lease{nullptr, nullptr})) {}
  Held& operator=(Held&& o) noexcept {
    if (this != &o) {
      reset();
      l_ = std::exchange(o.l_, BlockPool::Lease{nullptr, nullptr});
    }
    return *this;
  }
  ~Held() { reset(); }
  void* get() const { return l_.data; }
  void reset() {
    if (l_.ctx) BlockPool::give_back(l_.ctx);
    l_ = BlockPool::Lease{nullptr, nullptr};
  }

 private:
  BlockPool::Lease l_{nullptr, nullptr};
};

Held take(BlockPool& pool, size_t n) { return Held(pool.allocate(n)); }

// Maps one segment of `n` bytes into the pool and gives it back whole: the pool then holds one
// free block of n bytes. Returns its start.
char* free_segment(BlockPool& pool, size_t n) {
  Held p = take(pool, n);
  return static_cast<char*>(p.get());
}
}  // namespace

TEST_CASE("block pool hands a released block back to the next allocation of its size",
          "[trainer][comm][block_pool]") {
  BlockPool pool(heap_segments());
  void* first = nullptr;
  {
    Held a = take(pool, 2 * MiB);
    first = a.get();
    CHECK(pool.stats().in_use == 2 * MiB);
  }
  CHECK(pool.stats().in_use == 0);
  CHECK(pool.stats().idle == 2 * MiB);
  Held b = take(pool, 2 * MiB);
  CHECK(b.get() == first);
  CHECK(pool.stats().fresh == 1);
  CHECK(pool.stats().idle == 0);
}

TEST_CASE("block pool splits a larger free block rather than mapping a new one",
          "[trainer][comm][block_pool]") {
  BlockPool pool(heap_segments());
  char* const big = free_segment(pool, 3 * MiB);
  Held a = take(pool, 2 * MiB);  // the front of the free 3 MiB, the rest stays free
  CHECK(a.get() == big);
  CHECK(pool.stats().in_use == 2 * MiB);
  CHECK(pool.stats().idle == 1 * MiB);
  Held c = take(pool, 1 * MiB);  // the rest
  CHECK(c.get() == big + 2 * MiB);
  CHECK(pool.stats().fresh == 1);
  CHECK(pool.stats().idle == 0);
  SECTION("a rest smaller than kMinSplit stays with the block") {
    a = Held();
    Held d = take(pool, 2 * MiB - 64 * 1024);
    CHECK(d.get() == big);
    CHECK(pool.stats().in_use == 3 * MiB);
  }
}

TEST_CASE("block pool merges blocks given back next to each other into one",
          "[trainer][comm][block_pool]") {
  BlockPool pool(heap_segments());
  char* const base = free_segment(pool, 6 * MiB);
  {
    Held a = take(pool, 2 * MiB), b = take(pool, 2 * MiB), c = take(pool, 2 * MiB);
    CHECK(pool.stats().fresh == 1);
    std::set<char*> starts{static_cast<char*>(a.get()), static_cast<char*>(b.get()), static_cast<char*>(c.get())};
    CHECK(starts == std::set<char*>{base, base + 2 * MiB, base + 4 * MiB});
    b = Held();  // the middle first: two free neighbours join it afterwards
    a = Held();
  }
  Held again = take(pool, 6 * MiB);
  CHECK(again.get() == base);
  CHECK(pool.stats().fresh == 1);
  CHECK(pool.stats().segments == 1);
}

TEST_CASE("block pool reaches a steady state: a repeated step of mixed sizes maps nothing new",
          "[trainer][comm][block_pool]") {
  // One "step" of a sharded strategy: units gathered one after another (sizes that differ by more
  // than 2x), two reduction buffers alive at once, a gradient of yet another size.
  BlockPool pool(heap_segments());
  auto step = [&] {
    for (size_t unit : {8, 3, 13, 2}) {
      Held gathered = take(pool, unit * MiB);
      std::memset(gathered.get(), 1, unit * MiB);
    }
    Held grad = take(pool, 5 * MiB);
    Held r1 = take(pool, 3 * MiB), r2 = take(pool, 3 * MiB);
  };
  step();
  const BlockPool::Stats first = pool.stats();
  for (int i = 0; i < 5; ++i) step();
  const BlockPool::Stats later = pool.stats();
  CHECK(later.fresh == first.fresh);
  CHECK(later.in_use == 0);
  CHECK(later.in_use + later.idle <= later.high_water);
  pool.trim();
  CHECK(pool.stats().idle == 0);
  CHECK(pool.stats().segments == 0);
}

TEST_CASE("block pool: random allocations never overlap and keep their contents",
          "[trainer][comm][block_pool]") {
  BlockPool pool(heap_segments());
  std::mt19937 rng(20261126);
  struct Live {
    Held p;
    size_t n;
    unsigned char tag;
  };
  std::vector<Live> live;
  size_t live_bytes = 0;
  auto round_up = [](size_t n) { return (n + BlockPool::kBlockRound - 1) / BlockPool::kBlockRound * BlockPool::kBlockRound; };
  for (int i = 0; i < 2000; ++i) {
    if (live.empty() || rng() % 3 != 0) {
      const size_t n = MiB + rng() % (6 * MiB);
      Live l{take(pool, n), n, static_cast<unsigned char>(i)};
      REQUIRE(reinterpret_cast<uintptr_t>(l.p.get()) % 64 == 0);
      std::memset(l.p.get(), l.tag, n);
      live_bytes += round_up(n);
      live.push_back(std::move(l));
    } else {
      const size_t k = rng() % live.size();
      const auto* c = static_cast<const unsigned char*>(live[k].p.get());
      // A block that overlapped another would have been overwritten with that one's tag.
      REQUIRE(c[0] == live[k].tag);
      REQUIRE(c[live[k].n / 2] == live[k].tag);
      REQUIRE(c[live[k].n - 1] == live[k].tag);
      live_bytes -= round_up(live[k].n);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
    CHECK(pool.stats().in_use >= live_bytes);
    if (live.size() > 40) {
      live_bytes = 0;
      live.clear();
    }
  }
  live.clear();
  CHECK(pool.stats().in_use == 0);
  pool.trim();
  CHECK(pool.stats().segments == 0);
}

TEST_CASE("block pool keeps as many blocks of a size as were in use at once",
          "[trainer][comm][block_pool]") {
  BlockPool pool(heap_segments());
  for (int round = 0; round < 3; ++round) {
    std::vector<Held> held;
    for (int i = 0; i < 3; ++i) held.push_back(take(pool, 2 * MiB));
  }
  CHECK(pool.stats().fresh == 3);
  CHECK(pool.stats().idle == 6 * MiB);
  CHECK(pool.stats().high_water == 6 * MiB);
}

TEST_CASE("block pool never holds more than the most memory in use at once",
          "[trainer][comm][block_pool]") {
  BlockPool pool(heap_segments());
  {
    Held a = take(pool, 2 * MiB), b = take(pool, 2 * MiB);
  }
  REQUIRE(pool.stats().idle == 4 * MiB);
  // A size the pool has no block of: idle blocks are freed until the new one fits under 4 MiB.
  Held c = take(pool, 3 * MiB);
  auto s = pool.stats();
  CHECK(s.in_use == 3 * MiB);
  CHECK(s.in_use + s.idle <= 4 * MiB);
  Held d = take(pool, 1 * MiB);  // fits beside c under the mark: nothing freed
  s = pool.stats();
  CHECK(s.in_use + s.idle <= 4 * MiB);
  CHECK(s.high_water == 4 * MiB);
  // Sizes alternating between steps (units of different sizes) stay under the mark too.
  c = Held();
  d = Held();
  for (int step = 0; step < 4; ++step) {
    { Held e = take(pool, static_cast<size_t>(step + 1) * MiB); }
    s = pool.stats();
    CHECK(s.in_use + s.idle <= s.high_water);
  }
  pool.trim();
  CHECK(pool.stats().idle == 0);
}

TEST_CASE("block pool trims wholly free segments, largest first, and keeps partly used ones",
          "[trainer][comm][block_pool]") {
  BlockPool pool(heap_segments());
  Held kept;
  {
    Held a = take(pool, 2 * MiB), b = take(pool, 2 * MiB), c = take(pool, 4 * MiB);
    Held d = take(pool, 4 * MiB);
    d = Held();
    kept = take(pool, 1 * MiB);  // the front of d's free segment: d's segment is partly used now
  }
  REQUIRE(pool.stats().segments == 4);
  REQUIRE(pool.stats().idle == 11 * MiB);
  pool.trim_to(5 * MiB);  // the free 4 MiB segment, then one 2 MiB segment
  CHECK(pool.stats().idle == 5 * MiB);
  CHECK(pool.stats().segments == 2);
  pool.trim();  // the other 2 MiB segment; 3 MiB stay idle beside `kept`
  CHECK(pool.stats().idle == 3 * MiB);
  CHECK(pool.stats().segments == 1);
  Held again = take(pool, 3 * MiB);
  CHECK(static_cast<char*>(again.get()) == static_cast<char*>(kept.get()) + MiB);
  CHECK(pool.stats().fresh == 4);
}


TEST_CASE("block pool: threads allocating and giving back at once keep their blocks apart",
          "[trainer][comm][block_pool]") {
  // Autograd's and the communicator's threads allocate and free through one pool; a block may be
  // given back by a thread other than the one that took it (the shared `passed` list).
  BlockPool pool(heap_segments());
  std::mutex mu;
  std::vector<std::pair<Held, unsigned char>> passed;
  std::atomic<int> overwritten{0};
  auto intact = [&](const Held& h, unsigned char tag, size_t n) {
    const auto* c = static_cast<const unsigned char*>(h.get());
    if (c[0] != tag || c[n / 2] != tag || c[n - 1] != tag) ++overwritten;
  };
  constexpr size_t kSize = MiB + 4096;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<std::pair<Held, unsigned char>> mine;
      for (int i = 0; i < 300; ++i) {
        const auto tag = static_cast<unsigned char>(t * 64 + i % 64);
        Held h = take(pool, kSize);
        std::memset(h.get(), tag, kSize);
        mine.emplace_back(std::move(h), tag);
        if (rng() % 2 == 0) {
          std::lock_guard<std::mutex> lock(mu);
          passed.push_back(std::move(mine.back()));
          mine.pop_back();
        }
        if (mine.size() > 3) {
          intact(mine.front().first, mine.front().second, kSize);
          mine.erase(mine.begin());
        }
        std::pair<Held, unsigned char> other;
        {
          std::lock_guard<std::mutex> lock(mu);
          if (passed.size() > 2) {
            other = std::move(passed.front());
            passed.erase(passed.begin());
          }
        }
        if (other.first.get()) intact(other.first, other.second, kSize);  // given back by this thread
      }
    });
  }
  for (auto& th : threads) th.join();
  passed.clear();
  CHECK(overwritten == 0);
  CHECK(pool.stats().in_use == 0);
  pool.trim();
  CHECK(pool.stats().segments == 0);
}
