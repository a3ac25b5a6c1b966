#pragma once
// checkpoint.resume, parsed once: nothing (a fresh start), auto (the newest complete checkpoint
// under the work dir's checkpoints/, skipping damaged ones), or one checkpoint folder. The
// launcher's checks and the trainer hold this value, so "auto" is spelled in one place (the
// table below) and compared nowhere.
#include <string>
#include <string_view>

#include "lib/config/choice_table.hpp"

namespace mtrain::config {

struct Resume {
  enum class Kind { None, Auto, Path };
  Kind kind = Kind::None;
  std::string path;  // Kind::Path only

  static Resume none() { return {}; }
  static Resume automatic() { return {Kind::Auto, {}}; }
  static Resume at(std::string dir) { return {Kind::Path, std::move(dir)}; }
  bool given() const { return kind != Kind::None; }
  bool operator==(const Resume& o) const { return kind == o.kind && path == o.path; }
  bool operator!=(const Resume& o) const { return !(*this == o); }
};

// The keyword; None is spelled "" and Path as the folder.
template <>
struct ChoiceTable<Resume::Kind> {
  static constexpr const char* what = "resume";
  static constexpr ChoiceRow<Resume::Kind> rows[] = {{Resume::Kind::Auto, "auto"}};
};

// "" → none, "auto" → auto, any other text → that folder (checked where it is read: the
// launcher's resume_problems, the trainer's choose_resume).
Resume resume_from_text(std::string_view text);

// The setting's text: "", "auto" or the folder.
std::string to_string(const Resume& r);

}  // namespace mtrain::config
