#include <catch2/catch.hpp>

#include <csignal>

#include "lib/launch/exit_status.hpp"
#include "lib/launch/output.hpp"

using namespace mtrain::launch;

TEST_CASE("wait statuses are described in words", "[launch]") {
  auto e = from_wait_status(3 << 8);
  CHECK(e.describe() == "exit code 3");
  CHECK(e.launcher_code() == 3);
  auto k = from_wait_status(SIGKILL);
  CHECK(k.describe() == "signal SIGKILL (9)");
  CHECK(k.launcher_code() == 137);
  k.oom = true;
  CHECK(k.describe() == "signal SIGKILL (9), killed by the kernel's OOM killer");
  CHECK(signal_name(SIGTERM) == "SIGTERM");
}

TEST_CASE("console prefixes are configurable", "[launch]") {
  CHECK(format_prefix("[{host}:{rank}] ", "n1", 3, 1, "default") == "[n1:3] ");
  CHECK(format_prefix("{role}/{local_rank}|{unknown}", "n1", 3, 1, "trainer") == "trainer/1|{unknown}");
}

TEST_CASE("stderr tail keeps the last lines, partial lines complete at finish", "[launch]") {
  OutputOptions o;
  o.ranks_filter = {42};
  o.tail_lines = 3;
  RankOutput out(o, "h", 0, 0, "default", 0);
  std::string text = "1\n2\n3\n4\n5";
  out.feed(Stream::Err, text.data(), text.size());
  out.finish();
  CHECK(std::vector<std::string>(out.stderr_tail().begin(), out.stderr_tail().end()) ==
        std::vector<std::string>{"3", "4", "5"});
}
