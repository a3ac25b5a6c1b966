// `mtrain env` from an in-memory machine (lib/envreport/report.cpp): the JSON schema of the
// whole report.
#include <catch2/catch.hpp>

#include "machine.hpp"
#include "lib/envreport/report.hpp"

using namespace mtrain::envreport;
using namespace mtrain::envreport::testing;
using json = nlohmann::json;

TEST_CASE("env --format json follows the mtrain.env/1 schema", "[envreport]") {
  auto r = collect_report(healthy(), opts());
  REQUIRE(r.at("schema") == "mtrain.env/1");
  for (const char* k : {"mtrain", "os", "cpu", "memory", "gpus", "network", "slurm", "environment", "user_config", "shm",
                        "limits", "warnings"})
    REQUIRE(r.contains(k));
  CHECK(r.at("mtrain").at("version") == "0.1.0");
  CHECK(r.at("mtrain").at("worker").at("build").at("libtorch") == "1.13.0");
  CHECK(r.at("mtrain").at("worker").at("build").at("cuda").at("compiled") == false);
  CHECK(r.at("os").at("name") == "Debian GNU/Linux 12 (bookworm)");
  CHECK(r.at("os").at("kernel") == "6.1.0-test");
  CHECK(r.at("cpu").at("model") == "Test CPU 9000");
  CHECK(r.at("cpu").at("cores") == 4);
  CHECK(r.at("memory").at("total_bytes") == 16ull << 30);
  CHECK(r.at("memory").at("available_bytes") == 8ull << 30);
  REQUIRE(r.at("network").is_array());
  CHECK(r.at("network").at(1).at("name") == "eth0");
  CHECK(r.at("network").at(1).at("addresses").at(0) == "10.0.0.5");
  CHECK(r.at("shm").at("total_bytes") == 8ull << 30);
  CHECK(r.at("limits").at("open_files_soft") == 65536);
  CHECK(r.at("slurm").at("installed") == false);
  CHECK(r.at("slurm").at("in_allocation") == false);
  REQUIRE(r.at("environment").is_array());
  for (const auto& e : r.at("environment")) {
    REQUIRE(e.contains("name"));
    REQUIRE(e.contains("value"));
    REQUIRE(e.contains("source"));
  }
  CHECK(r.at("warnings").is_array());
  INFO(r.at("warnings").dump(2));
  CHECK(r.at("warnings").empty());
}
