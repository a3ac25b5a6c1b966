#pragma once
// The failure report: the root-cause rank first (the first to fail on its own), then a line per
// other failed rank.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "lib/launch/exit_status.hpp"
#include "lib/plan/plan.hpp"

namespace mtrain::launch {

struct RankFailure {
  std::string host;
  int rank = 0, local_rank = 0;
  int pid = 0;
  ExitStatus status;
  double elapsed_s = 0;
  bool stopped_by_launcher = false;
  std::vector<std::string> stderr_tail;
  std::string error_file;  // TORCHELASTIC_ERROR_FILE written by the rank, if any
  // It lies in the launcher's temporary folder, removed when the launcher exits: the report
  // quotes the message and does not name a path that will not exist when it is read.
  bool error_file_removed = false;
};

struct Failure {
  RankFailure root;                 // unused when `external`
  std::vector<RankFailure> others;  // with `external`: every rank that was stopped
  std::string cause;                // why the root rank was stopped (a stall), or the external reason
  bool external = false;            // stopped from outside (another node, the launcher's connection)
  int external_code = 1;            // the launcher's exit code then
  // The root was chosen by the earliest error file, not by the first exit: why, and the exit
  // code of the rank that exited first (the launcher's exit code stays that one's).
  std::string first_by_error_file;
  std::optional<int> exit_code;
};

std::string format_report(const plan::LaunchPlan& plan, const Failure& f, int attempt, int max_restarts);
void print_report(std::FILE* out, const plan::LaunchPlan& plan, const Failure& f, int attempt, int max_restarts);

}  // namespace mtrain::launch
