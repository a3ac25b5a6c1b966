#pragma once
// How the launcher starts one node agent on another host over ssh (`--launcher ssh`), as data:
// the ssh argv, the remote shell command line, and the bytes written to ssh's stdin.
//
// Protocol between launcher and remote agent:
//   * Secrets (MTRAIN_RDZV_TOKEN) never appear in an argv (visible in `ps` on both machines):
//     the remote command reads them as the first lines of its stdin, in `secret_env` order.
//   * The remote shell prints "MTRAIN_AGENT job=<job id> pgid=<$$>" before exec'ing the agent;
//     sshd makes the command a session (and process group) leader, and exec keeps the pid, so
//     the launcher records that number and can stop the agent later with `kill -- -PGID` over a
//     second ssh (stop_command_line) even if the first connection is gone.
//   * ssh's stdin stays open for the job's lifetime; the agent treats EOF on it as "the launcher
//     is gone" and tears its ranks down (ranks die with their agent via PDEATHSIG).
// The remote login shell must be POSIX (sh, bash, dash, zsh), as for DeepSpeed's ssh runner.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mtrain::remote {

using Env = std::map<std::string, std::string>;

struct SshOptions {
  std::string program = "ssh";
  std::string host;             // from the hostfile; must not start with '-'
  std::string user;             // user@host in the hostfile; empty: ssh's default
  int port = 0;                 // 0: ssh's default (or ~/.ssh/config)
  std::string identity_file;    // -i
  int connect_timeout_s = 10;   // ConnectTimeout: an unreachable host fails instead of hanging
  int alive_interval_s = 5;     // ServerAliveInterval × ServerAliveCountMax bounds a dead link
  int alive_count_max = 3;
  std::vector<std::string> options;  // extra -o KEY=VALUE (e.g. StrictHostKeyChecking=accept-new)
};

struct RemoteCommand {
  std::string job_id;                   // named in the agent announcement
  std::string workdir;                  // cd here first (the launcher's cwd); empty: home
  Env env;                              // exported (forwarded_env + the agent's own settings)
  std::vector<std::string> secret_env;  // names read from stdin lines, in order
  std::vector<std::string> argv;        // the agent: mtrain launch … --node-rank …
};

// Variables forwarded from the launcher's environment to every agent: names starting with
// NCCL_, GLOO_, CUDA_, PYTHON, OMP_ or MTRAIN_, except CUDA_VISIBLE_DEVICES (it describes the
// launcher's GPUs, not the node's — GPUs come from the hostfile) and the secrets in `exclude`;
// plus every --export item ("VAR" takes the launcher's value; "VAR=VALUE" sets it). An --export
// of an unset VAR, or a name that is not a shell identifier, is an mtrain::Error.
Env forwarded_env(const Env& launcher_env, const std::vector<std::string>& exports,
                  const std::vector<std::string>& exclude = {"MTRAIN_RDZV_TOKEN"});

// The command line the remote login shell runs; every piece quoted with str::shell_quote.
// Env names must be shell identifiers (Error otherwise).
std::string remote_command_line(const RemoteCommand& cmd);

// What to write to ssh's stdin first: one line per secret_env name, values from `secrets`
// (a missing secret or one holding a newline is an Error).
std::string stdin_preamble(const RemoteCommand& cmd, const Env& secrets);

// ssh's argv: no tty, no X11 or agent forwarding, BatchMode (never a password prompt),
// timeouts, then `--`, [user@]host and the remote command line as one argument.
std::vector<std::string> ssh_argv(const SshOptions& ssh, const std::string& remote_command_line);

// The remote command that stops a recorded agent: `kill -s SIGNAL -- -PGID`.
std::string stop_command_line(int pgid, const std::string& signal = "TERM");

// Where an agent records its process group: <dir>/<node>.pgid with dir = agent_record_dir(job).
// The directory is ${XDG_RUNTIME_DIR:-/tmp}/mtrain-<job id>, on the agent's host.
std::string agent_record_dir(const std::string& job_id, const Env& agent_env);

// The remote command that stops an agent by the group it recorded for this job, for when its
// announcement never arrived: reads the record, checks it is a number above 1, signals the group.
std::string stop_recorded_command_line(const std::string& job_id, const std::string& node,
                                       const std::string& signal = "TERM");

// The agent's pgid from one line of ssh output if it is this job's announcement.
std::optional<int> parse_announcement(const std::string& line, const std::string& job_id);

}  // namespace mtrain::remote
