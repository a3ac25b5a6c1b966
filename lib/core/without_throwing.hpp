#pragma once
// Teardown that must not throw: in a destructor an escaping exception is std::terminate (a core
// dump instead of the job's report), and no caller is left to tell.
#include <exception>

namespace mtrain {

// "mtrain: warning: <doing> failed: <what>" on standard error.
void warn_swallowed(const char* doing, const char* what) noexcept;

// Runs `work`; what it throws is said by warn_swallowed and goes no further.
template <class Work>
void without_throwing(const char* doing, Work&& work) noexcept {
  try {
    work();
  } catch (const std::exception& e) {
    warn_swallowed(doing, e.what());
  } catch (...) {
    warn_swallowed(doing, "an exception that is no std::exception");
  }
}

}  // namespace mtrain
