#pragma once
// The path of the running executable, as the kernel knows it (/proc/self/exe): what `mtrain`
// uses to find the mtrain-worker installed beside it, the scripts under ../share, and what
// `mtrain env` and --version report. One place, so a future non-Linux or a test override is one
// change.
#include <string>

namespace mtrain {

// Empty when the kernel does not say (no /proc).
std::string own_executable();

}  // namespace mtrain
