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

// The base of the two kinds below, which say what a failure means to whoever reads the exit
// code; throw one of them. An Error built directly takes the code it is given (a code passed on
// from a child process or another Error), kExitUsage when none is given — the older spelling of
// UsageError, still used outside lib/trainer, lib/launch and mtrain-worker, whose throws the
// layout test holds to the kinds.
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

// Bad input — a flag, a setting, a file the user gave — found before anything was started (or
// before the work it asked for began): exit 2. The hint says what to change.
class UsageError : public Error {
 public:
  explicit UsageError(std::string message, std::string hint = {}) : Error(std::move(message), std::move(hint)) {}
};

// A broken internal invariant (a bug: the hint asks for a report) or a failure while running —
// I/O, a peer, a timeout, a child that died — that different input would not have avoided: exit 1.
class RuntimeFailure : public Error {
 public:
  explicit RuntimeFailure(std::string message, std::string hint = {})
      : Error(std::move(message), std::move(hint), kExitFailure) {}
};

// The process's exit code for an exception that ended a command: an Error's own code, 1 for any
// other exception (std::bad_alloc, a library's error: nothing says the input was at fault).
int exit_code_of(const std::exception& e);

// Position in a one-line input (1-based column), used by the small grammars (masks, filters).
Error parse_error(const std::string& what_kind, const std::string& input, size_t column,
                  const std::string& problem, const std::string& hint = {});

}  // namespace mtrain
