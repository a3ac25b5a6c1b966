#pragma once
// TORCHELASTIC_ERROR_FILE: what a failing rank records for its launcher, in torchrun's format
// (torch.distributed.elastic's @record), so that `mtrain launch`, torchrun and any tool reading
// torchelastic error files understand the bundled trainer's failures as they do Python ranks':
//
//   {"message": {"message": "<one paragraph>",
//                "extraInfo": {"timestamp": "<unix seconds>", "rank": R, "host": H, "pid": P}}}
//
// The launcher blames the rank with the earliest error file (torchrun's rule, lib/launch
// supervisor.cpp), by the file's modification time. A rank's own failure is often reported only
// later: a failed checkpoint write is first voted on with the other ranks, who then fail too
// ("1 of 2 ranks could not write"). `note_own_failure` marks the moment of the rank's own fault;
// the record carries that moment (timestamp and mtime), so the rank that hit the fault stays the
// earliest even when a peer's consequent failure is written first.
#include <chrono>
#include <ctime>
#include <optional>
#include <string>

namespace mtrain {

struct ErrorRecord {
  std::string message;  // one paragraph, no stack trace
  int rank = -1;        // -1: not a rank of a job
  std::string host;
  long pid = 0;
  std::chrono::system_clock::time_point when;
};

// The file's text (one JSON object and a newline). Pure.
std::string error_file_text(const ErrorRecord& r);

// The message of a file in this format, or of torchrun's older flat {"message": "..."}; nullopt
// when the text is not such a record. Pure.
std::optional<std::string> error_file_message(const std::string& text);

// Marks now as the moment of this process's own fault, if none is marked yet. Thread-safe.
void note_own_failure();
// The marked moment, if any.
std::optional<std::chrono::system_clock::time_point> own_failure_time();

// Writes `r` to `path` atomically (a new file beside it, then rename: a reader sees nothing or
// the whole record; a planted link is never followed), with `r.when` as its modification time.
// Returns false (errno set) when it could not: a rank that fails must not fail again over this.
bool write_error_file(const std::string& path, const ErrorRecord& r) noexcept;

}  // namespace mtrain
