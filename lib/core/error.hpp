#pragma once
// Errors with context. Every user-facing failure is one paragraph: what went wrong, where
// (file:line:column or the offending value), and what to try. `Error` carries those parts
// separately so callers can add context as the error travels up without re-parsing text.
#include <stdexcept>
#include <string>

namespace mtrain {

// Exit codes shared by every subcommand.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,      // the job ran and failed (a rank's own code is used when known)
  kExitUsage = 2,        // bad input: nothing was started
  kExitNotBuilt = 2,     // a subcommand that this build does not provide yet
};

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, std::string hint = {}, int exit_code = kExitUsage);

  const std::string& message() const { return message_; }
  const std::string& hint() const { return hint_; }
  int exit_code() const { return exit_code_; }

  // Prefix the message with where it happened ("hosts.txt:3:7", "--gpus").
  Error& at(const std::string& where);

  // The whole paragraph, as printed: "error: <where>: <message>. <hint>".
  std::string paragraph() const;

 private:
  void rebuild();
  std::string message_;
  std::string hint_;
  int exit_code_;
};

// Position in a one-line input (1-based column), used by the small grammars (masks, filters).
Error parse_error(const std::string& what_kind, const std::string& input, size_t column,
                  const std::string& problem, const std::string& hint = {});

}  // namespace mtrain
