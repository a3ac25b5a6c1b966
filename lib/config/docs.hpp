#pragma once
// docs/settings.md, generated from the registry by `mtrain config docs` (a test checks that the
// committed file matches, so the docs cannot drift from the code).
#include <string>

#include "lib/config/registry.hpp"

namespace mtrain::config {

std::string settings_markdown(const Registry& reg);

}  // namespace mtrain::config
