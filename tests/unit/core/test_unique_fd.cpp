// UniqueFd (core/unique_fd.hpp): one owner, closed once, close() reporting what ::close says.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

#include "lib/core/unique_fd.hpp"

using mtrain::UniqueFd;

namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

int open_null() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

}  // namespace

TEST_CASE("UniqueFd closes what it owns when it goes", "[core][unique_fd]") {
  int raw = -1;
  {
    UniqueFd fd(open_null());
    raw = fd.get();
    REQUIRE(fd.valid());
    CHECK(is_open(raw));
  }
  CHECK_FALSE(is_open(raw));
  UniqueFd empty;
  CHECK_FALSE(empty);
  CHECK(empty.close() == 0);  // holding nothing is not an error
}

TEST_CASE("UniqueFd moves ownership, the moved-from object closes nothing", "[core][unique_fd]") {
  UniqueFd a(open_null());
  const int raw = a.get();
  UniqueFd b(std::move(a));
  CHECK_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): the point of the test
  CHECK(b.get() == raw);
  std::vector<UniqueFd> held;
  held.push_back(std::move(b));
  CHECK(is_open(raw));
  UniqueFd c(open_null());
  const int other = c.get();
  c = std::move(held.back());  // c's old descriptor is closed, raw taken over
  CHECK_FALSE(is_open(other));
  CHECK(c.get() == raw);
  held.clear();
  CHECK(is_open(raw));
}

TEST_CASE("UniqueFd release gives the descriptor away, reset closes the old one", "[core][unique_fd]") {
  UniqueFd fd(open_null());
  const int raw = fd.release();
  CHECK_FALSE(fd.valid());
  CHECK(is_open(raw));
  fd.reset(raw);
  UniqueFd second(open_null());
  const int old = second.get();
  second.reset(open_null());
  CHECK_FALSE(is_open(old));
  fd.reset();
  CHECK_FALSE(is_open(raw));
}

TEST_CASE("UniqueFd close() reports the error of ::close and never closes twice", "[core][unique_fd]") {
  UniqueFd fd(open_null());
  const int raw = fd.get();
  REQUIRE(::close(raw) == 0);  // closed behind its back: the next close fails with EBADF
  CHECK(fd.close() == EBADF);
  CHECK_FALSE(fd.valid());
  // The number may be reused now; a second close() or the destructor must not touch it.
  const int reused = open_null();
  CHECK(fd.close() == 0);
  CHECK(is_open(reused));
  ::close(reused);  // NOLINT: the test's own raw descriptor
}
