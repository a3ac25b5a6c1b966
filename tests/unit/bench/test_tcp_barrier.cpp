#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <catch2/catch.hpp>

#include "lib/bench/tcp_barrier.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::bench;

namespace {
int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}
std::map<std::string, std::string> env(int rank, int world, int port) {
  return {{"RANK", std::to_string(rank)}, {"WORLD_SIZE", std::to_string(world)}, {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", std::to_string(port)}};
}
}  // namespace

TEST_CASE("every rank passes the TCP barrier, whoever starts first", "[bench][barrier]") {
  const int world = 4, port = free_port();
  std::atomic<int> passed{0};
  std::vector<std::thread> ts;
  for (int r = world - 1; r >= 0; --r)  // peers before rank 0: they must retry until it listens
    ts.emplace_back([&, r] {
      if (run_tcp_barrier(env(r, world, port), 10000) == 0) ++passed;
    });
  for (auto& t : ts) t.join();
  CHECK(passed == world);
}

TEST_CASE("rank 0 gives up when a rank never arrives", "[bench][barrier]") {
  CHECK_THROWS_WITH(run_tcp_barrier(env(0, 2, free_port()), 300), Catch::Matchers::Contains("only 1 of 2 ranks arrived"));
  CHECK_THROWS_AS(run_tcp_barrier({{"RANK", "0"}}, 300), mtrain::Error);
}
