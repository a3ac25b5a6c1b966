#pragma once
// `--launcher ssh`: one node agent per host, started over ssh (lib/remote builds the commands),
// watched from one event loop. The launcher holds the rendezvous store; agents join it, so the
// store's state (a node reported a failure, or its heartbeats stopped) is the job's state.
//
//   * Secrets (MTRAIN_RDZV_TOKEN) go to each agent on its ssh stdin, never in an argv; the stdin
//     stays open for the job, and closing it tells the agent the launcher is gone.
//   * Each agent announces its process group ("MTRAIN_AGENT job=… pgid=…", not relayed) and
//     records it in ${XDG_RUNTIME_DIR:-/tmp}/mtrain-<job>/<node>.pgid. To stop a job (an agent
//     or ssh failed, the store failed, Ctrl-C/SIGTERM) the launcher closes every stdin and runs
//     `kill -s TERM -- -PGID` over a second ssh on each host (from the announcement, else the
//     record), then KILL after the grace period — never by process name.
//   * Agents' output is relayed as it comes (they prefix their ranks' lines already).
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "lib/launch/process.hpp"
#include "lib/launch/restart_backoff.hpp"
#include "lib/remote/ssh_command.hpp"
#include "lib/rendezvous/store.hpp"

namespace mtrain::launch {

struct SshNode {
  std::string host, user;
  std::vector<std::string> agent_argv;  // mtrain launch --ssh-agent … -- program
};

struct SshRunOptions {
  std::string job_id;
  std::vector<SshNode> nodes;           // in node-rank order
  remote::SshOptions ssh;               // program, port, options (host/user are per node)
  remote::Env env;                      // exported on every node
  std::string workdir;                  // cd there first; empty: the remote home
  std::string token;                    // MTRAIN_RDZV_TOKEN, written to each stdin
  std::string job_spec;                 // MTRAIN_JOB_SPEC (one line of JSON) for the bundled trainer
  std::chrono::milliseconds grace{5000};
  std::chrono::milliseconds poll{200};  // how often the store's state is looked at
  std::function<rendezvous::StoreStatus()> job_status;  // the launcher's store; may be empty
  std::function<void(const std::string&)> abort_job;     // tell the store the job is over
  // The job has restarts (--max-restarts > 0): an agent that ends badly (its ssh connection
  // dropped, the agent killed, the host gone) is a lost node, not the end of the job. The store
  // is told at once (lose_node: re-form without it, or fail when no restart is left — the store
  // decides), the other agents stay, and a new agent is started on that host after a back-off
  // (restart_backoff.hpp), again while the job lives: when the host answers, its agent joins
  // as a new node (taken in by the next round, or at once with scale up). The job's end is the
  // store's: finished, or failed with its reason.
  bool restarts = false;
  std::function<bool(const std::string& host, const std::string& why)> lose_node;
  RestartBackoff respawn;
  std::FILE* out = stdout;
  std::FILE* err = stderr;
};

// Returns the launcher's exit code: 0 when every agent finished (with restarts: the store's job
// finished; agents that were replaced do not count); else the exit code of the
// agent that failed first (its rank's code), 1 when a node was lost (its heartbeats stopped or
// its ssh connection failed), 128+signal when the launcher was stopped.
int run_over_ssh(const SshRunOptions& opt, ProcessRunner& runner);

}  // namespace mtrain::launch
