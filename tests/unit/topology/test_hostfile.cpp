#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include <unistd.h>

#include "lib/core/error.hpp"
#include "lib/topology/hostfile.hpp"

using namespace mtrain::topology;
using Catch::Contains;

namespace {
// The paragraph of the Error thrown by parsing `text` as "hosts", or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse_hostfile(text, "hosts");
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == 2);
    return e.paragraph();
  }
  return "";
}
}  // namespace

TEST_CASE("hostfile: DeepSpeed lines, comments, blank lines, users and gpus=", "[topology][hostfile]") {
  auto inv = parse_hostfile(
      "# cluster\n"
      "\n"
      "worker-0 slots=4\n"
      "   alice@worker-1\tslots=2   # two cards\n"
      "worker-2 gpus=3,0,2\r\n"
      "10.0.0.7 slots=1\n",
      "hosts");
  REQUIRE(inv.size() == 4);
  CHECK(inv[0].host == "worker-0");
  CHECK(inv[0].user.empty());
  CHECK(inv[0].slots == std::vector<int>{0, 1, 2, 3});
  CHECK(inv[1].host == "worker-1");
  CHECK(inv[1].user == "alice");
  CHECK(inv[1].slots == std::vector<int>{0, 1});
  CHECK(inv[2].slots == std::vector<int>{0, 2, 3});
  CHECK(inv[3].host == "10.0.0.7");
  CHECK(total_slots(inv) == 10);
}

TEST_CASE("hostfile: the last line may lack a newline, order is file order", "[topology][hostfile]") {
  auto inv = parse_hostfile("b slots=1\na slots=2", "hosts");
  REQUIRE(inv.size() == 2);
  CHECK(inv[0].host == "b");
  CHECK(inv[1].slots == std::vector<int>{0, 1});
}

TEST_CASE("hostfile errors name file, line and column", "[topology][hostfile]") {
  CHECK_THAT(error_of("a slots=1\na slots=2\n"),
             Contains("hosts:2:1") && Contains("'a' is listed again (first on line 1)"));
  CHECK_THAT(error_of("a slots=1\n  b\n"), Contains("hosts:2:4") && Contains("no slots=N"));
  CHECK_THAT(error_of("a slots=x1\n"), Contains("hosts:1:9") && Contains("'x1' is not a whole number"));
  CHECK_THAT(error_of("a slots=\n"), Contains("hosts:1:9") && Contains("needs a number"));
  CHECK_THAT(error_of("a slots=-1\n"), Contains("hosts:1:9"));
  CHECK_THAT(error_of("a slots=0\n"), Contains("hosts:1:9") && Contains("nothing to run"));
  CHECK_THAT(error_of("# c\na slot=4\n"),
             Contains("hosts:2:3") && Contains("unknown key 'slot'") && Contains("Did you mean 'slots'"));
  CHECK_THAT(error_of("a cpus=4\n"), Contains("hosts:1:3") && Contains("unknown key 'cpus'"));
  CHECK_THAT(error_of("a slots=2 gpus=0,1\n"), Contains("hosts:1:11") && Contains("not both"));
  CHECK_THAT(error_of("a slots=2 slots=3\n"), Contains("hosts:1:11") && Contains("given twice"));
  CHECK_THAT(error_of("a gpus=0,,2\n"), Contains("hosts:1:10") && Contains("empty GPU index"));
  CHECK_THAT(error_of("a gpus=0,1,0\n"), Contains("hosts:1:12") && Contains("GPU 0 is listed twice"));
  CHECK_THAT(error_of("a gpus=0,z\n"), Contains("hosts:1:10") && Contains("'z' is not a GPU index"));
  CHECK_THAT(error_of("a 4\n"), Contains("hosts:1:3") && Contains("not KEY=VALUE"));
  CHECK_THAT(error_of("slots=4\n"), Contains("hosts:1:1") && Contains("must start with a host name"));
  CHECK_THAT(error_of("@a slots=1\n"), Contains("hosts:1:1") && Contains("missing user"));
  CHECK_THAT(error_of("bob@ slots=1\n"), Contains("hosts:1:5") && Contains("missing host"));
  CHECK_THAT(error_of("wor/ker slots=1\n"), Contains("hosts:1:4") && Contains("'/'"));
  // A colon after the name (the --include form) is a parse error at the colon, not a host
  // "localhost:" that fails name resolution later; IPv6 addresses keep theirs.
  CHECK_THAT(error_of("localhost: slots=2\n"), Contains("hosts:1:10") && Contains("':' after host name 'localhost'"));
  CHECK_THAT(error_of("  w-1:2 slots=2\n"), Contains("hosts:1:6"));
  CHECK(error_of("fe80::1 slots=1\n").empty());
}

TEST_CASE("hostfile: empty or comment-only file is an error", "[topology][hostfile]") {
  CHECK_THAT(error_of(""), Contains("hosts: the hostfile lists no hosts"));
  CHECK_THAT(error_of("# only a comment\n\n   \n"), Contains("lists no hosts"));
}

TEST_CASE("hostfile: every valid slots=N gives slots 0..N-1", "[topology][hostfile]") {
  for (int n = 1; n <= 16; ++n) {
    auto inv = parse_hostfile("h slots=" + std::to_string(n) + "\n", "hosts");
    REQUIRE(inv.size() == 1);
    REQUIRE(inv[0].slots.size() == static_cast<size_t>(n));
    CHECK(inv[0].slots.front() == 0);
    CHECK(inv[0].slots.back() == n - 1);
  }
}

TEST_CASE("load_hostfile reads a file and names unreadable paths", "[topology][hostfile]") {
  char dir_tmpl[] = "/tmp/mtrain-hostfile-XXXXXX";
  REQUIRE(mkdtemp(dir_tmpl) != nullptr);
  std::string dir = dir_tmpl;
  std::string path = dir + "/hosts";
  {
    std::ofstream f(path);
    f << "worker-0 slots=2\nworker-1 slots=1\n";
  }
  auto inv = load_hostfile(path);
  REQUIRE(inv.size() == 2);
  CHECK(inv[1].host == "worker-1");

  CHECK_THROWS_WITH(load_hostfile(dir + "/missing"),
                    Contains(dir + "/missing: cannot read the hostfile") && Contains("No such file"));
  CHECK_THROWS_WITH(load_hostfile(dir), Contains("is a directory"));
  {
    std::ofstream f(path);
    f << "worker-0 slots=2\nworker-0 slots=1\n";
  }
  CHECK_THROWS_WITH(load_hostfile(path), Contains(path + ":2:1"));
  std::remove(path.c_str());
  rmdir(dir.c_str());
}
