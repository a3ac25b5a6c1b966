#include "lib/slurm/client.hpp"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::slurm {

namespace {

std::string stderr_text(const CommandResult& r) {
  std::string e = str::trim(r.err.empty() ? r.out : r.err);
  return e.empty() ? fmt::format("(no message, exit code {})", r.exit_code) : e;
}

}  // namespace

void check_job_id(const std::string& job_id) {
  static const std::regex re(R"(^\d+([_+]\d+)?$)");
  if (!std::regex_match(job_id, re))
    throw Error(fmt::format("'{}' is not a Slurm job id", job_id),
                "Give the number printed by `mtrain slurm submit` (or squeue's JOBID), e.g. 1234.");
}

CommandResult SlurmClient::call(const std::vector<std::string>& argv, bool must_start) {
  CommandResult r = run_.run(argv, timeout_);
  if (r.not_found && must_start)
    throw Error(fmt::format("cannot run {}: {}", argv[0], r.errno_text),
                fmt::format("{} comes with Slurm's client tools (Debian: slurm-client); run this on a "
                            "login node of the cluster, or use `mtrain slurm script` to only print the script.",
                            argv[0]),
                kExitFailure);
  if (r.timed_out)
    throw Error(fmt::format("`{}` did not answer within {:.0f} s", str::shell_join(argv), timeout_),
                "The Slurm controller may be down or overloaded; try again, or check `sinfo`.", kExitFailure);
  return r;
}

SubmitResult SlurmClient::submit(const std::string& script_path) {
  CommandResult r = call({"sbatch", "--parsable", script_path});
  if (r.exit_code != 0) {
    std::string msg = stderr_text(r);
    std::string hint = fmt::format("The script is kept at {}; fix the option sbatch names and submit again.", script_path);
    std::string lower = msg;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (lower.find("partition") != std::string::npos) {
      auto parts = partitions();
      if (!parts.empty()) hint = "Partitions here: " + str::join(parts, ", ") + ". " + hint;
    }
    throw Error(fmt::format("sbatch refused the job: {}", msg), hint, kExitUsage);
  }
  std::string line = str::trim(r.out);
  line = line.substr(0, line.find('\n'));
  SubmitResult s;
  auto semi = line.find(';');
  s.job_id = str::trim(line.substr(0, semi));
  if (semi != std::string::npos) s.cluster = str::trim(line.substr(semi + 1));
  if (s.job_id.empty() || !std::regex_match(s.job_id, std::regex(R"(^\d+([_+]\d+)?$)")))
    throw Error(fmt::format("sbatch --parsable printed '{}', not a job id", line),
                "Check `sbatch --version`; mtrain expects Slurm 17.11 or newer.", kExitFailure);
  return s;
}

JobStatus SlurmClient::status(const std::string& job_id) {
  check_job_id(job_id);
  std::string fmt_ = fmt::format("%i{0}%T{0}%r{0}%N{0}%M{0}%j", kSep);
  std::optional<JobStatus> st;
  CommandResult q = call({"squeue", "-h", "-t", "all", "-j", job_id, "-o", fmt_});
  if (q.exit_code == 0) st = parse_squeue(q.out, job_id);
  if (st && !st->terminal()) {
    // Still queued or running: scontrol adds the output paths.
    CommandResult c = call({"scontrol", "show", "job", "-o", job_id}, false);
    if (c.exit_code == 0)
      if (auto sc = parse_scontrol(c.out, job_id)) {
        st->stdout_path = sc->stdout_path;
        st->stderr_path = sc->stderr_path;
      }
    return *st;
  }
  // Ended (or forgotten by the controller): accounting has the exit code.
  const std::string fields = "JobID,State,ExitCode,NodeList,Elapsed,JobName";
  std::optional<JobStatus> acct;
  CommandResult a = call({"sacct", "-n", "-P", "-X", "-j", job_id, "-o", fields}, false);
  if (!a.not_found && a.exit_code == 0) {
    acct = parse_sacct(a.out, job_id);
    if (acct) acct->source = "sacct";
  }
  if (!acct && !a.not_found) {
    // Accounting storage off: the job-completion log (jobcomp/filetxt) is read with -c.
    CommandResult c = call({"sacct", "-c", "-n", "-P", "-j", job_id, "-o", fields}, false);
    if (c.exit_code == 0) {
      acct = parse_sacct(c.out, job_id);
      if (acct) acct->source = "sacct -c";
    }
  }
  std::optional<JobStatus> sc;
  CommandResult c = call({"scontrol", "show", "job", "-o", job_id}, false);
  if (!c.not_found && c.exit_code == 0) sc = parse_scontrol(c.out, job_id);

  // Merge: the most specific answer for each field.
  std::optional<JobStatus> best = st ? st : (acct ? acct : sc);
  if (!best)
    throw Error(fmt::format("Slurm knows no job {}", job_id),
                "squeue, sacct and scontrol have no record of it (finished jobs are forgotten after "
                "MinJobAge without accounting); check the id.",
                kExitUsage);
  JobStatus out = *best;
  for (const auto* other : {acct ? &*acct : nullptr, sc ? &*sc : nullptr}) {
    if (!other) continue;
    if (out.exit_code < 0 && other->exit_code >= 0) {
      out.exit_code = other->exit_code;
      out.signal = other->signal;
    }
    if (out.state.empty() || (!out.terminal() && other->terminal())) out.state = other->state;
    if (out.name.empty()) out.name = other->name;
    if (out.nodes.empty()) out.nodes = other->nodes;
    if (out.stdout_path.empty()) out.stdout_path = other->stdout_path;
    if (out.stderr_path.empty()) out.stderr_path = other->stderr_path;
    if (out.source.find(other->source) == std::string::npos) out.source += ", " + other->source;
  }
  return out;
}

void SlurmClient::cancel(const std::string& job_id, const std::string& signal) {
  check_job_id(job_id);
  // scancel exits 0 without a word for an unknown job: ask first, and run it verbose so that
  // a refusal shows up on stderr.
  JobStatus st = status(job_id);
  if (st.terminal())
    throw Error(fmt::format("job {} has already ended: {}", job_id, st.readable()), "Nothing to cancel.", kExitUsage);
  std::vector<std::string> argv{"scancel", "-v"};
  if (!signal.empty()) argv.push_back("--signal=" + signal);
  argv.push_back(job_id);
  CommandResult r = call(argv);
  if (r.exit_code != 0 || r.err.find("error:") != std::string::npos)
    throw Error(fmt::format("scancel refused: {}", str::trim(r.err.substr(r.err.find("error:") == std::string::npos ? 0 : r.err.find("error:")))),
                "Check the job id with `mtrain slurm status ID`; only its owner (or root) can cancel a job.",
                kExitUsage);
}

std::vector<std::string> SlurmClient::partitions() {
  CommandResult r = run_.run({"sinfo", "-h", "-o", "%R"}, timeout_);
  std::vector<std::string> out;
  if (r.not_found || r.timed_out || r.exit_code != 0) return out;
  for (const auto& l : str::split(r.out, '\n'))
    if (!str::trim(l).empty()) out.push_back(str::trim(l));
  return out;
}

}  // namespace mtrain::slurm
