// The shared-memory collectives with ranks as threads, each joined to the group through its own
// mapping of the real /dev/shm segment (as ranks in processes are). Torch-free (mtrain_shm): also
// run under ASan+UBSan and TSan (scripts/sanitize). Values are small integers, so every sum is
// exact in fp32 and each result is checked for equality.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lib/trainer/comm/shm_collectives.hpp"

using namespace mtrain::trainer;

namespace {

// The group's agreement (ShmRendezvous) in memory: what the worker does through the c10d store.
class ThreadRendezvous {
 public:
  explicit ThreadRendezvous(int world) : world_(world) {}
  // `refuse`: this rank reports that it could not map the segment.
  ShmRendezvous for_rank(bool refuse = false) {
    ShmRendezvous r;
    r.publish = [this](const std::string& name) {
      std::lock_guard<std::mutex> lock(mu_);
      name_ = name;
      published_ = true;
      cv_.notify_all();
    };
    r.lookup = [this] {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return published_; });
      return name_;
    };
    r.count_ok = [this, refuse](bool ok) {
      std::unique_lock<std::mutex> lock(mu_);
      ++arrived_;
      if (ok && !refuse) ++ok_;
      cv_.notify_all();
      cv_.wait(lock, [this] { return arrived_ == world_; });
      return ok_;
    };
    return r;
  }

 private:
  int world_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string name_;
  bool published_ = false;
  int arrived_ = 0, ok_ = 0;
};

std::mutex& check_mutex() {  // Catch2 v2 assertions are not thread-safe
  static std::mutex m;
  return m;
}

// Runs fn(group, rank) on `world` threads, each with its own group over one segment of slots of
// `chunk` floats; rethrows the first failure.
void on_ranks(int world, int64_t chunk, const std::function<void(ShmCollectives&, int)>& fn,
              std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  ThreadRendezvous rdzv(world);
  std::vector<std::future<void>> done;
  for (int r = 0; r < world; ++r) {
    done.push_back(std::async(std::launch::async, [&, r] {
      ShmOptions o;
      o.rank = r;
      o.world = world;
      o.timeout = timeout;
      o.chunk_floats = chunk;
      std::string why;
      auto g = ShmCollectives::join(o, rdzv.for_rank(), &why);
      if (!g) throw std::runtime_error("join failed: " + why);
      fn(*g, r);
    }));
  }
  for (auto& d : done) d.get();
}

// Rank r's element i: a small integer, distinct per rank and position.
float value(int r, int64_t i, int salt) { return static_cast<float>((r + 1) * 1000 + (i * 7 + salt) % 997); }

float sum_over_ranks(int world, int64_t i, int salt) {
  float s = 0;
  for (int q = 0; q < world; ++q) s += value(q, i, salt);
  return s;
}

// Sizes that end mid-chunk, fill one chunk exactly, and span several.
const std::vector<int64_t> kSizes = {1, 5, 64, 65, 200, 1000};

}  // namespace

TEST_CASE("shm all_reduce, reduce_scatter and all_gather give exact results at worlds 2-5, back to back",
          "[trainer][comm][shm]") {
  for (int world = 2; world <= 5; ++world) {
    DYNAMIC_SECTION("world " << world) {
      on_ranks(world, 64, [world](ShmCollectives& g, int r) {
        int salt = 0;
        for (int64_t n : kSizes) {
          ++salt;
          std::vector<float> data(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) data[static_cast<size_t>(i)] = value(r, i, salt);
          g.all_reduce(data.data(), n, nullptr).get();
          bool ok = true;
          for (int64_t i = 0; i < n; ++i) ok = ok && data[static_cast<size_t>(i)] == sum_over_ranks(world, i, salt);
          std::lock_guard<std::mutex> lock(check_mutex());
          CHECK(ok);
        }
        for (int64_t k : kSizes) {
          ++salt;
          std::vector<float> in(static_cast<size_t>(k * world)), out(static_cast<size_t>(k), -1.0f);
          for (int64_t i = 0; i < k * world; ++i) in[static_cast<size_t>(i)] = value(r, i, salt);
          g.reduce_scatter(in.data(), out.data(), k, nullptr).get();
          bool ok = true;
          for (int64_t i = 0; i < k; ++i) ok = ok && out[static_cast<size_t>(i)] == sum_over_ranks(world, r * k + i, salt);
          std::lock_guard<std::mutex> lock(check_mutex());
          CHECK(ok);
        }
        for (int64_t k : kSizes) {
          ++salt;
          std::vector<float> in(static_cast<size_t>(k)), out(static_cast<size_t>(k * world), -1.0f);
          for (int64_t i = 0; i < k; ++i) in[static_cast<size_t>(i)] = value(r, i, salt);
          g.all_gather(in.data(), out.data(), k, nullptr).get();
          bool ok = true;
          for (int q = 0; q < world; ++q)
            for (int64_t i = 0; i < k; ++i) ok = ok && out[static_cast<size_t>(q * k + i)] == value(q, i, salt);
          std::lock_guard<std::mutex> lock(check_mutex());
          CHECK(ok);
        }
      });
    }
  }
}

TEST_CASE("shm collectives queued without waiting run in order, interleaved kinds, exact at worlds 2-5",
          "[trainer][comm][shm]") {
  // A strategy submits the next reduction while earlier ones are in flight; every rank submits
  // the same sequence and waits only at the end.
  for (int world = 2; world <= 5; ++world) {
    DYNAMIC_SECTION("world " << world) {
      on_ranks(world, 48, [world](ShmCollectives& g, int r) {
        constexpr int kRounds = 6;
        const int64_t n = 150, k = 70;
        std::vector<std::vector<float>> ar(kRounds), rs_in(kRounds), rs_out(kRounds), ag_in(kRounds), ag_out(kRounds);
        std::vector<std::shared_future<void>> pending;
        for (int s = 0; s < kRounds; ++s) {
          ar[s].resize(n);
          for (int64_t i = 0; i < n; ++i) ar[s][static_cast<size_t>(i)] = value(r, i, 10 * s);
          rs_in[s].resize(static_cast<size_t>(k * world));
          for (int64_t i = 0; i < k * world; ++i) rs_in[s][static_cast<size_t>(i)] = value(r, i, 10 * s + 1);
          rs_out[s].assign(static_cast<size_t>(k), -1.0f);
          ag_in[s].resize(static_cast<size_t>(k));
          for (int64_t i = 0; i < k; ++i) ag_in[s][static_cast<size_t>(i)] = value(r, i, 10 * s + 2);
          ag_out[s].assign(static_cast<size_t>(k * world), -1.0f);
          // The order of kinds changes with the round, the same on every rank.
          auto reduce = [&] { pending.push_back(g.all_reduce(ar[s].data(), n, nullptr)); };
          auto scatter = [&] { pending.push_back(g.reduce_scatter(rs_in[s].data(), rs_out[s].data(), k, nullptr)); };
          auto gather = [&] { pending.push_back(g.all_gather(ag_in[s].data(), ag_out[s].data(), k, nullptr)); };
          if (s % 2 == 0) {
            reduce(), scatter(), gather();
          } else {
            gather(), reduce(), scatter();
          }
        }
        for (auto& f : pending) f.get();
        bool ok = true;
        for (int s = 0; s < kRounds; ++s) {
          for (int64_t i = 0; i < n; ++i) ok = ok && ar[s][static_cast<size_t>(i)] == sum_over_ranks(world, i, 10 * s);
          for (int64_t i = 0; i < k; ++i)
            ok = ok && rs_out[s][static_cast<size_t>(i)] == sum_over_ranks(world, r * k + i, 10 * s + 1);
          for (int q = 0; q < world; ++q)
            for (int64_t i = 0; i < k; ++i) ok = ok && ag_out[s][static_cast<size_t>(q * k + i)] == value(q, i, 10 * s + 2);
        }
        std::lock_guard<std::mutex> lock(check_mutex());
        CHECK(ok);
      });
    }
  }
}

TEST_CASE("shm reduce_scatter_pieces sums pieces given in place with zeros in the gaps", "[trainer][comm][shm]") {
  for (int world = 2; world <= 5; ++world) {
    DYNAMIC_SECTION("world " << world) {
      on_ranks(world, 32, [world](ShmCollectives& g, int r) {
        const int64_t k = 37, total = k * world;
        // Pieces of varying length with gaps between them and at both ends; they differ per rank.
        std::vector<std::vector<float>> store;
        std::vector<ShmCollectives::Piece> pieces;
        std::vector<float> dense(static_cast<size_t>(total), 0.0f);
        for (int64_t at = 1 + r; at < total;) {
          const int64_t len = std::min<int64_t>(5 + (at + r) % 23, total - at);
          store.emplace_back(static_cast<size_t>(len));
          for (int64_t i = 0; i < len; ++i) {
            store.back()[static_cast<size_t>(i)] = value(r, at + i, 3);
            dense[static_cast<size_t>(at + i)] = value(r, at + i, 3);
          }
          at += len + 1 + (at % 3);
        }
        int64_t at = 1 + r;
        for (auto& s : store) {
          pieces.push_back({at, s.data(), static_cast<int64_t>(s.size())});
          at += static_cast<int64_t>(s.size()) + 1 + (at % 3);
        }
        std::vector<float> out(static_cast<size_t>(k), -1.0f), expect(static_cast<size_t>(k), -1.0f);
        g.reduce_scatter_pieces(pieces, out.data(), k, nullptr).get();
        g.reduce_scatter(dense.data(), expect.data(), k, nullptr).get();  // the same input, flat
        std::lock_guard<std::mutex> lock(check_mutex());
        CHECK(out == expect);
      });
    }
  }
}

TEST_CASE("two shm groups in one process run at once without touching each other's segment",
          "[trainer][comm][shm]") {
  auto group = [](int world, int salt) {
    on_ranks(world, 16, [world, salt](ShmCollectives& g, int r) {
      for (int round = 0; round < 20; ++round) {
        std::vector<float> data(100);
        for (int64_t i = 0; i < 100; ++i) data[static_cast<size_t>(i)] = value(r, i, salt + round);
        g.all_reduce(data.data(), 100, nullptr).get();
        bool ok = true;
        for (int64_t i = 0; i < 100; ++i) ok = ok && data[static_cast<size_t>(i)] == sum_over_ranks(world, i, salt + round);
        std::lock_guard<std::mutex> lock(check_mutex());
        CHECK(ok);
      }
    });
  };
  auto a = std::async(std::launch::async, group, 2, 100);
  auto b = std::async(std::launch::async, group, 3, 200);
  a.get();
  b.get();
}

TEST_CASE("shm collectives hold what they were given until done", "[trainer][comm][shm]") {
  on_ranks(3, 16, [](ShmCollectives& g, int r) {
    auto buf = std::make_shared<std::vector<float>>(50, static_cast<float>(r + 1));
    std::weak_ptr<std::vector<float>> watch = buf;
    float* data = buf->data();
    auto f = g.all_reduce(data, 50, std::move(buf));
    f.get();
    std::lock_guard<std::mutex> lock(check_mutex());
    CHECK(watch.expired());  // released once done, not kept by the queue
  });
}

TEST_CASE("a rank that never arrives fails its peers' collectives with an error naming it",
          "[trainer][comm][shm]") {
  std::atomic<int> failed{0};
  on_ranks(
      3, 16,
      [&](ShmCollectives& g, int r) {
        if (r == 2) return;  // joins, then never calls
        std::vector<float> data(40, 1.0f);
        std::string what;
        try {
          g.all_reduce(data.data(), 40, nullptr).get();
        } catch (const std::exception& e) {
          what = e.what();
        }
        std::string later;
        try {
          g.all_gather(data.data(), data.data(), 1, nullptr).get();
        } catch (const std::exception& e) {
          later = e.what();
        }
        std::lock_guard<std::mutex> lock(check_mutex());
        CHECK_THAT(what, Catch::Contains("rank 2 did not reach step 1"));
        CHECK_THAT(later, Catch::Contains("out of step"));
        ++failed;
      },
      std::chrono::milliseconds(200));
  CHECK(failed == 2);
}

TEST_CASE("shm join returns no group on any rank when one rank cannot map the segment", "[trainer][comm][shm]") {
  constexpr int world = 3;
  ThreadRendezvous rdzv(world);
  std::vector<std::future<std::pair<bool, std::string>>> done;
  for (int r = 0; r < world; ++r) {
    done.push_back(std::async(std::launch::async, [&, r] {
      ShmOptions o;
      o.rank = r;
      o.world = world;
      o.chunk_floats = 16;
      std::string why;
      auto g = ShmCollectives::join(o, rdzv.for_rank(/*refuse=*/r == 1), &why);
      return std::make_pair(g != nullptr, why);
    }));
  }
  for (auto& d : done) {
    const auto [joined, why] = d.get();
    CHECK_FALSE(joined);
    CHECK(why == "1 of 3 ranks could not map the /dev/shm segment");
  }
}
