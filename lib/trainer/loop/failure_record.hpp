#pragma once
// A failing rank of the bundled trainer records why in TORCHELASTIC_ERROR_FILE (the launcher
// gives each rank one), in torchrun's format (lib/core/error_file.hpp): the failure's one
// paragraph, the rank, the host, the pid and the moment of the rank's own fault. The launcher
// reads it into its report and blames the rank with the earliest record, as torchrun does.
#include <exception>
#include <map>
#include <string>

namespace mtrain::trainer {

// The paragraph a failure is reported with: an mtrain::Error's paragraph, any other exception's
// text without a C++ backtrace (comm/exception_text.hpp).
std::string failure_paragraph(const std::exception& e);

// Writes the record when `env` has TORCHELASTIC_ERROR_FILE; once per process (the first failure
// is the one recorded: a later catch of the same exception on its way out changes nothing).
void record_failure(const std::map<std::string, std::string>& env, const std::exception& e);

}  // namespace mtrain::trainer
