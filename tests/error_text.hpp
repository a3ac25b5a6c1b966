#pragma once
// The paragraph of the mtrain::Error a call throws, for tests that check what a refusal says.
#include <functional>
#include <string>

#include "lib/core/error.hpp"

namespace mtrain::testing {

// "" when fn throws nothing.
inline std::string error_text(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const mtrain::Error& e) {
    return e.paragraph();
  }
  return "";
}

}  // namespace mtrain::testing
