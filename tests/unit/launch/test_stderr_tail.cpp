// A rank's stderr tail for the failure report (lib/launch/stderr_tail.cpp): stack frames folded.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "lib/launch/stderr_tail.hpp"

using namespace mtrain::launch;

TEST_CASE("stack frames in a rank's stderr tail are folded into one line", "[launch][report]") {
  CHECK(is_stack_frame("frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f in libc10.so)"));
  CHECK(is_stack_frame("  frame #12: <unknown function> + 0x8609 (0x7f in /lib/libpthread.so.0)"));
  CHECK_FALSE(is_stack_frame("frame #: x"));
  CHECK_FALSE(is_stack_frame("the frame #3: not at the start"));
  CHECK_FALSE(is_stack_frame("frame #3 no colon"));
  std::deque<std::string> tail;
  push_tail_line(tail, 20, "terminate called after throwing an instance of 'gloo::IoException'");
  push_tail_line(tail, 20, "  what():  [pair.cc:598] Connection closed by peer [127.0.0.1]:27341");
  for (int i = 0; i < 11; ++i) push_tail_line(tail, 20, "frame #" + std::to_string(i) + ": fn + 0x1 (0x7f in lib.so)");
  push_tail_line(tail, 20, "after");
  REQUIRE(tail.size() == 4);
  CHECK(tail[1].find("Connection closed by peer") != std::string::npos);
  CHECK(tail[2] == "[… 11 C++ stack frames left out: the rank's stderr has them]");
  CHECK(tail[3] == "after");
  for (int i = 0; i < 3; ++i) push_tail_line(tail, 3, "frame #" + std::to_string(i) + ": g");
  CHECK(tail.size() == 3);
  CHECK(tail.back() == "[… 3 C++ stack frames left out: the rank's stderr has them]");
  push_tail_line(tail, 3, "[… 7 C++ stack frames left out: the rank's stderr has them]");  // a rank's own text
  push_tail_line(tail, 3, "frame #0: h");  // folds onto it: harmless, the count is all it says
  CHECK(tail.size() == 3);
}

TEST_CASE("c10's backtrace header is recognised", "[launch][report]") {
  CHECK(is_backtrace_header("Exception raised from sendBytes at /p/Utils.hpp:757 (most recent call first):"));
  CHECK(is_backtrace_header("  Exception raised from f at a.cpp:1 (most recent call first):  "));
  CHECK_FALSE(is_backtrace_header("Exception raised from f at a.cpp:1"));
  CHECK_FALSE(is_backtrace_header("an Exception raised from f (most recent call first):"));
  CHECK(console_fold_line(11, "/l/stderr.log") == "[… 11 C++ stack frames left out: /l/stderr.log has them]");
}
