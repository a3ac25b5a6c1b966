#pragma once
// What every command writes besides its flags' parsing: its result on standard output, checked,
// and the library's warnings on standard error.
#include <string>
#include <vector>

namespace mtrain::app {

// Writes and flushes `text`: a full disk, /dev/full or a closed pipe throws RuntimeFailure (exit 1)
// naming standard output and the system's reason, never a silent exit 0 with the result lost.
void print_stdout(const std::string& text);

// Each as "mtrain: warning: …" on standard error (the texts are visible text already).
void print_warnings(const std::vector<std::string>& warnings);

}  // namespace mtrain::app
