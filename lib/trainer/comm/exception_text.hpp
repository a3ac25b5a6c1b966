#pragma once
// The text of an exception as one paragraph for a person: LibTorch's c10::Error carries its C++
// backtrace in what() ("Exception raised from … (most recent call first):", "frame #0: …"),
// eleven lines of addresses on a Gloo timeout. Reports and error files get the message alone.
#include <exception>
#include <string>

namespace mtrain::trainer {

// c10::Error: what_without_backtrace(); any other exception: what(), cut before a backtrace;
// trailing white space removed.
std::string exception_text(const std::exception& e);

// The part of `what` before a c10-style backtrace (pure; exposed for tests).
std::string without_backtrace(const std::string& what);

}  // namespace mtrain::trainer
