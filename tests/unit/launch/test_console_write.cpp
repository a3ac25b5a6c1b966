// The console writer (lib/launch/console_write.cpp) under EINTR, partial writes, EAGAIN and EPIPE,
// with a fake write that follows a script of answers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "lib/launch/console_write.hpp"

using namespace mtrain::launch;

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
