#pragma once
// The last lines of a rank's stderr, kept for the failure report (issue 17, item 10). A C++
// exception that escapes LibTorch/Gloo prints its message and then a dozen "frame #N: …" lines
// (c10::Error's backtrace): kept as they are they push the message itself out of the tail, and
// the report's "last lines of stderr" becomes a stack trace naming no rank. Consecutive frame
// lines are folded into one line saying how many were left out; the log file and the console
// keep every line.
#include <cstddef>
#include <deque>
#include <string>
#include <string_view>

namespace mtrain::launch {

// "frame #12: c10::Error::Error(…) + 0x57 (0x7f… in libc10.so)", leading blanks allowed.
bool is_stack_frame(std::string_view line);

// Appends `line` to `tail` (at most `limit` lines), folding runs of stack frames.
void push_tail_line(std::deque<std::string>& tail, std::size_t limit, const std::string& line);

}  // namespace mtrain::launch
