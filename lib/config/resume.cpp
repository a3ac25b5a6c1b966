#include "lib/config/resume.hpp"

namespace mtrain::config {

Resume resume_from_text(std::string_view text) {
  if (text.empty()) return Resume::none();
  if (parse_choice<Resume::Kind>(text)) return Resume::automatic();
  return Resume::at(std::string(text));
}

std::string to_string(const Resume& r) {
  switch (r.kind) {
    case Resume::Kind::None: return "";
    case Resume::Kind::Auto: return to_string(Resume::Kind::Auto);
    case Resume::Kind::Path: return r.path;
  }
  no_such_value(r.kind);
}

}  // namespace mtrain::config
