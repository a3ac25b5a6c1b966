#include "lib/config/choice_table.hpp"

#include <fmt/format.h>

#include "lib/core/strings.hpp"

namespace mtrain::config {

Error unknown_choice(std::string_view what, std::string_view name, const std::vector<std::string>& names,
                     const std::string& key) {
  const auto near = str::closest(std::string(name), names);
  return Error(fmt::format("unknown {} '{}'", what, name),
               near ? fmt::format("did you mean '{}'? (one of {})", *near, str::join(names, ", "))
                    : fmt::format("use one of {}", str::join(names, ", ")))
      .at(key);
}

void throw_missing_row(std::string_view what, int id) {
  throw Error(fmt::format("the {} name table has no row for enum value {}", what, id), "", kExitFailure);
}

}  // namespace mtrain::config
