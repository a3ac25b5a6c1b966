// Pure pieces of the launcher's robustness (issue 17): the console writer under EINTR, partial
// writes, EAGAIN and EPIPE (with a fake write); control characters made visible; job ids; the
// restart backoff schedule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "mtrain/core/error.hpp"
#include "mtrain/launch/console_write.hpp"
#include "mtrain/launch/job_id.hpp"
#include "mtrain/launch/restart_backoff.hpp"
#include "mtrain/launch/stderr_tail.hpp"
#include "mtrain/launch/visible_text.hpp"

using namespace mtrain::launch;
using std::chrono::milliseconds;

namespace {
// A writer that follows a script of answers: n > 0 takes at most n bytes, -E fails with errno E.
struct ScriptedWriter {
  std::vector<int> answers;
  size_t next = 0;
  std::string got;
  int calls = 0;
  WriteFn fn() {
    return [this](int, const void* data, size_t n) -> ssize_t {
      ++calls;
      int a = next < answers.size() ? answers[next++] : 1 << 30;
      if (a < 0) {
        errno = -a;
        return -1;
      }
      size_t take = std::min<size_t>(n, static_cast<size_t>(a));
      got.append(static_cast<const char*>(data), take);
      return static_cast<ssize_t>(take);
    };
  }
};
}  // namespace

TEST_CASE("write_all retries EINTR and finishes partial writes: no byte lost", "[launch][console]") {
  ScriptedWriter w;
  w.answers = {-EINTR, 3, -EINTR, -EINTR, 1, 2, -EINTR};
  std::string line = "[host:0] hello world\n";
  CHECK(write_all(1, line.data(), line.size(), w.fn()) == WriteResult::Ok);
  CHECK(w.got == line);
}

TEST_CASE("write_all waits out EAGAIN on a non-blocking console", "[launch][console]") {
  ScriptedWriter w;
  w.answers = {-EAGAIN, 4, -EWOULDBLOCK};
  std::string line = "0123456789\n";
  // poll() on fd 1 (the test's stdout) says writable at once.
  CHECK(write_all(1, line.data(), line.size(), w.fn()) == WriteResult::Ok);
  CHECK(w.got == line);
}

TEST_CASE("write_all reports a console that went away, and other errors", "[launch][console]") {
  ScriptedWriter gone;
  gone.answers = {2, -EINTR, -EPIPE};
  std::string line = "abcdef\n";
  CHECK(write_all(1, line.data(), line.size(), gone.fn()) == WriteResult::Gone);
  CHECK(gone.got == "ab");
  ScriptedWriter io;
  io.answers = {-EIO};
  CHECK(write_all(1, line.data(), line.size(), io.fn()) == WriteResult::Failed);
  ScriptedWriter zero;
  zero.answers = {0};
  CHECK(write_all(1, line.data(), line.size(), zero.fn()) == WriteResult::Failed);
  CHECK(zero.calls == 1);  // no spin on a write that makes no progress
}

TEST_CASE("control characters are shown visibly", "[launch][visible]") {
  CHECK(visible_text("plain text, tabs\tand UTF-8 é ✓") == "plain text, tabs\tand UTF-8 é ✓");
  CHECK(visible_text("\x1b]0;PWNED\x07") == "^[]0;PWNED^G");
  CHECK(visible_text("\x1b[2J") == "^[[2J");
  CHECK(visible_text(std::string("a\0b", 3)) == "a^@b");
  CHECK(visible_text("cr\rlf\n del\x7f") == "cr^Mlf^J del^?");
  CHECK(visible_text("csi \xc2\x9b" "31m") == "csi \\u009b31m");  // C1 CSI as UTF-8
  CHECK(visible_text("\xc2\xa0") == "\xc2\xa0");                  // NBSP is not a control
  CHECK(visible_text("\xc2") == "\xc2");                          // a lone lead byte stays
}

TEST_CASE("job ids are names", "[launch][job_id]") {
  for (const std::string& good : std::vector<std::string>{"J", "mtrain-1a2b3c4d", "slurm-123.0", "run_2026.11-a", std::string(128, 'x')})
    CHECK(job_id_problem(good).empty());
  for (const std::string& bad : std::vector<std::string>{"", ".", "..", "../../x", "a/b", "/abs", "-rf", ".hidden", "a b", "tab\there", "x;rm",
                          std::string(129, 'x'), std::string("nul\0x", 5), "é"})
    CHECK_FALSE(job_id_problem(bad).empty());
  CHECK(job_id_problem("a/b").find("'/'") != std::string::npos);
  try {
    check_job_id("../../../x", "--job-id");
    FAIL("no error");
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == 2);
    std::string m = e.paragraph();
    CHECK(m.find("../../../x") != std::string::npos);
    CHECK(m.find("--job-id") != std::string::npos);
  }
}

TEST_CASE("restart backoff: doubling from base, capped; a long healthy attempt resets it", "[launch][backoff]") {
  RestartBackoff b;  // 1 s, cap 30 s, healthy after 5 min
  std::vector<long> want = {0, 1000, 2000, 4000, 8000, 16000, 30000, 30000};
  for (int s = 0; s < static_cast<int>(want.size()); ++s) CHECK(restart_delay(s, b).count() == want[s]);
  CHECK(restart_delay(1000, b) == b.cap);  // no overflow after many restarts
  CHECK(restart_delay(1 << 30, b) == b.cap);
  long total = 0;
  for (int s = 1; s <= 1000; ++s) total += restart_delay(s, b).count();
  CHECK(total > 1000L * 29000);  // 1000 quick restarts take hours, not 2.4 s
  CHECK(next_streak(0, milliseconds(10), b) == 1);
  CHECK(next_streak(5, milliseconds(10), b) == 6);
  CHECK(next_streak(5, std::chrono::minutes(6), b) == 1);
  RestartBackoff off;
  off.base = milliseconds(0);
  CHECK(restart_delay(7, off).count() == 0);
}

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
