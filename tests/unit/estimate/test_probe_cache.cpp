#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "lib/estimate/probe_cache.hpp"

using namespace mtrain::estimate;

TEST_CASE("probe answers are kept under a key of the arguments, the job and the worker", "[estimate]") {
  const std::string dir = "/tmp/mtrain_test_probe_cache_" + std::to_string(::getpid());
  ::setenv("MTRAIN_CACHE_DIR", dir.c_str(), 1);
  const std::string worker = dir + "-worker";
  std::ofstream(worker) << "v1";
  const std::string k = probe_cache_key(worker, "--batches 1,2", R"({"model":"gpt"})");
  CHECK(k != probe_cache_key(worker, "--batches 1", R"({"model":"gpt"})"));
  CHECK(k != probe_cache_key(worker, "--batches 1,2", R"({"model":"mlp"})"));
  CHECK_FALSE(probe_cache_get(k));
  probe_cache_put(k, {{"rss_start_bytes", 123}});
  const auto back = probe_cache_get(k);
  REQUIRE(back);
  CHECK((*back)["rss_start_bytes"] == 123);
  // A rebuilt worker (another size) measures again.
  std::ofstream(worker) << "version 2";
  CHECK(probe_cache_key(worker, "--batches 1,2", R"({"model":"gpt"})") != k);
  // A torn file is no answer.
  std::ofstream(dir + "/" + k + ".json") << "{\"rss_start";
  CHECK_FALSE(probe_cache_get(k));
  ::unsetenv("MTRAIN_CACHE_DIR");
  std::filesystem::remove_all(dir);
  std::filesystem::remove(worker);
}
