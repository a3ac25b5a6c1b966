#pragma once
// The text of an exception as one paragraph for a person: LibTorch's c10::Error carries its C++
// backtrace in what() ("Exception raised from … (most recent call first):", "frame #0: …"),
// eleven lines of addresses on a Gloo timeout. Reports and error files get the message alone.
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

namespace mtrain::trainer {

// c10::Error: what_without_backtrace(); any other exception: what(), cut before a backtrace;
// trailing white space removed.
std::string exception_text(const std::exception& e);

// The part of `what` before a c10-style backtrace (pure; exposed for tests).
std::string without_backtrace(const std::string& what);

// The c10-style backtrace in `what` ("Exception raised from …" and the "frame #N" lines after
// it), "" when it has none: what the rank's log keeps and the console folds (issue 45).
std::string backtrace_of(const std::string& what);

// A failure inside the user's TorchScript code, as PyTorch worded it. The interpreter's text is
// "The following operation failed in the TorchScript interpreter.", "Traceback of TorchScript
// (most recent call last):", the user's source lines with "<--- HERE" under the call, and last
// PyTorch's own error ("RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x10 and 8x3)");
// an ATen error outside the interpreter is that message alone. A model saved with its debug info
// has two tracebacks, of the serialized code and of the original source: the original is kept. `error` is PyTorch's error (its
// first line first), `traceback` the TorchScript traceback (empty for an ATen error), at most
// kMaxTracebackLines lines: a user's file is untrusted text of any length.
struct ScriptError {
  std::string error;
  std::vector<std::string> traceback;
};
inline constexpr std::size_t kMaxTracebackLines = 60;
ScriptError script_error(const std::exception& e);
ScriptError split_script_error(const std::string& text);  // pure; `text` without a backtrace

}  // namespace mtrain::trainer
