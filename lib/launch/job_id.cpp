#include "lib/launch/job_id.hpp"

#include <cctype>

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::launch {

namespace {
bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}
}  // namespace

std::string job_id_problem(const std::string& id) {
  if (id.empty()) return "it is empty";
  if (id.size() > kMaxJobIdLength) return fmt::format("it is {} characters long (at most {})", id.size(), kMaxJobIdLength);
  for (size_t i = 0; i < id.size(); ++i)
    if (!name_char(id[i]))
      return fmt::format("character {} is {}", i + 1,
                         id[i] == '/' ? std::string("'/'")
                         : std::isprint(static_cast<unsigned char>(id[i])) ? fmt::format("'{}'", id[i])
                                                                           : fmt::format("byte 0x{:02x}", static_cast<unsigned char>(id[i])));
  if (!std::isalnum(static_cast<unsigned char>(id[0]))) return "it does not start with a letter or a digit";
  return "";
}

void check_job_id(const std::string& id, const std::string& source) {
  std::string why = job_id_problem(id);
  if (why.empty()) return;
  std::string shown = id.size() > 80 ? id.substr(0, 80) + "…" : id;
  for (auto& c : shown)
    if (!std::isprint(static_cast<unsigned char>(c)) && !(static_cast<unsigned char>(c) & 0x80)) c = '?';
  throw UsageError(fmt::format("the job id '{}' (from {}) is not a name: {}", shown, source, why),
                   fmt::format("A job id names folders under --log-dir and TMPDIR: use 1-{} letters, digits, '.', '_' "
                               "and '-', starting with a letter or a digit (e.g. run-2026.11_a).",
                               kMaxJobIdLength));
}

}  // namespace mtrain::launch
