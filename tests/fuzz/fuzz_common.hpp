#pragma once
// Shared by every fuzz target. A target feeds arbitrary bytes to one parser; the only accepted
// failure is mtrain::Error (a user-facing error with exit code 2). Anything else — another
// exception type escaping, an abort, a sanitizer report, a broken invariant — is a finding.
//
// The same sources build two ways (tests/fuzz/CMakeLists.txt): with libFuzzer in the clang
// fuzz build (MTRAIN_FUZZ=ON), and with replay_main.cpp in the normal build, where CTest runs
// every committed corpus and regression file through them.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "lib/core/error.hpp"

namespace mtrain::fuzz {

// A broken invariant: print it and abort, which both libFuzzer and the replay test report.
[[noreturn]] inline void invariant_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "fuzz invariant broken at %s:%d: %s\n", file, line, what);
  std::abort();
}

// Run `f`; an mtrain::Error is the accepted outcome, and its paragraph must be printable and
// non-empty (users read it). Other exceptions propagate: that is the crash we look for.
template <class F>
bool accepts(F&& f) {
  try {
    f();
    return true;
  } catch (const mtrain::Error& e) {
    if (e.paragraph().empty()) invariant_failed("an Error with an empty paragraph", __FILE__, __LINE__);
    return false;
  }
}

inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Split at the first '\n': the first line and the rest (empty if there is no newline).
inline std::pair<std::string, std::string> first_line(const std::string& s) {
  auto nl = s.find('\n');
  if (nl == std::string::npos) return {s, ""};
  return {s.substr(0, nl), s.substr(nl + 1)};
}

}  // namespace mtrain::fuzz

#define FUZZ_CHECK(cond) \
  do { \
    if (!(cond)) ::mtrain::fuzz::invariant_failed(#cond, __FILE__, __LINE__); \
  } while (0)
