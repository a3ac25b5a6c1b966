#include "lib/core/error.hpp"

#include <fmt/format.h>

namespace mtrain {

Error::Error(std::string message, std::string hint, int exit_code)
    : std::runtime_error(message), message_(std::move(message)), hint_(std::move(hint)),
      exit_code_(exit_code) {
  rebuild();
}

Error& Error::at(const std::string& where) {
  if (!where.empty()) message_ = where + ": " + message_;
  rebuild();
  return *this;
}

void Error::rebuild() { static_cast<std::runtime_error&>(*this) = std::runtime_error(paragraph()); }

std::string Error::paragraph() const {
  std::string out = "error: " + message_;
  if (!hint_.empty()) {
    if (!out.empty() && out.back() != '.') out += '.';
    out += ' ' + hint_;
  }
  return out;
}

int exit_code_of(const std::exception& e) {
  if (const auto* err = dynamic_cast<const Error*>(&e)) return err->exit_code();
  return kExitFailure;
}

Error parse_error(const std::string& what_kind, const std::string& input, size_t column,
                  const std::string& problem, const std::string& hint) {
  // Show the input with a caret under the column so the user sees the spot at a glance.
  std::string caret(column > 0 ? column - 1 : 0, ' ');
  return Error(fmt::format("{} '{}' column {}: {}\n  {}\n  {}^", what_kind, input, column, problem,
                           input, caret),
               hint);
}

}  // namespace mtrain
