#pragma once
// The last lines of a rank's stderr, kept for the failure report (issue 17, item 10). A C++
// exception that escapes LibTorch/Gloo prints its message and then a dozen "frame #N: …" lines
// (c10::Error's backtrace): kept as they are they push the message itself out of the tail, and
// the report's "last lines of stderr" becomes a stack trace naming no rank. Consecutive frame
// lines are folded into one line saying how many were left out. The log file keeps every line;
// the console folds the same way, naming the log file or --log-dir (output.hpp): LibTorch
// 2.x also prints whole backtraces in mere warnings (TCPStore's "sendBytes failed … Broken pipe"
// from a rank that lost its peer), which on the console only bury the rank's own error.
#include <cstddef>
#include <deque>
#include <string>
#include <string_view>

namespace mtrain::launch {

// "frame #12: c10::Error::Error(…) + 0x57 (0x7f… in libc10.so)", leading blanks allowed.
bool is_stack_frame(std::string_view line);

// "Exception raised from sendBytes at …/Utils.hpp:757 (most recent call first):", the line c10
// prints before the frames.
bool is_backtrace_header(std::string_view line);

// The console's stand-in for a run of `frames` frame lines that `log_file` holds.
std::string console_fold_line(std::size_t frames, const std::string& log_file);

// Appends `line` to `tail` (at most `limit` lines), folding runs of stack frames.
void push_tail_line(std::deque<std::string>& tail, std::size_t limit, const std::string& line);

}  // namespace mtrain::launch
