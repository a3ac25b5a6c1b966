// Issue 41 item 2: descriptors are owned (core/unique_fd.hpp). Nothing in lib/ or apps/ closes a
// descriptor by number except UniqueFd itself and close_descriptor(), the async-signal-safe close
// for code between fork() and exec() and in signal handlers.
#include <catch2/catch.hpp>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "source_tree.hpp"

using namespace mtrain::layout;

TEST_CASE("only UniqueFd closes descriptors", "[layout]") {
  // `close(x)` or `::close(x)` with a plain name as its argument: a member close() of another
  // class (`.close()`, `->close()`, `X::close(`) or a call with no argument is not a descriptor.
  const std::regex raw_close(R"((^|[^\w.>:])(::)?close\s*\(\s*[A-Za-z_][\w.\->\[\]]*\s*\))");
  std::vector<std::string> files = files_under("lib", {".cpp", ".hpp"});
  for (const auto& f : files_under("apps", {".cpp", ".hpp"})) files.push_back(f);
  REQUIRE(files.size() > 100);
  int checked = 0;
  for (const auto& f : files) {
    if (f == "lib/core/unique_fd.cpp") continue;
    std::istringstream in(read_text(source_dir() + "/" + f));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const auto code = line.substr(0, line.find("//"));
      INFO(f << ":" << n << ": " << line);
      CHECK_FALSE(std::regex_search(code, raw_close));
      ++checked;
    }
  }
  CHECK(checked > 10000);
  // The pattern itself finds what it must.
  CHECK(std::regex_search(std::string("  ::close(fd_);"), raw_close));
  CHECK(std::regex_search(std::string("    if (fd >= 0) close(fd);"), raw_close));
  CHECK_FALSE(std::regex_search(std::string("  fd_.close();"), raw_close));
  CHECK_FALSE(std::regex_search(std::string("Guardian::~Guardian() { close(std::chrono::seconds(2)); }"), raw_close));
}
