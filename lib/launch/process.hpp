#pragma once
// ProcessRunner: the narrow interface between the supervisor and the operating system, so the
// supervision logic can be driven by a fake in tests.
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/core/unique_fd.hpp"

namespace mtrain::launch {

struct SpawnRequest {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // the complete environment of the child
  bool stdin_pipe = false;                 // give the child a pipe as stdin (else /dev/null)
};

struct Spawned {
  pid_t pid = -1;
  UniqueFd stdout_fd;  // read ends
  UniqueFd stderr_fd;
  UniqueFd stdin_fd;  // write end when stdin_pipe was asked for
};

struct Reaped {
  pid_t pid = -1;
  int status = 0;  // as from waitpid
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // Start a child in its own process group that dies with the launcher (parent-death signal).
  // Throws mtrain::Error if the program cannot be executed.
  virtual Spawned spawn(const SpawnRequest& req) = 0;
  // Signal the child's whole process group (the rank and anything it started). Never called
  // for a pid that reap() has returned: its number may belong to someone else by then.
  virtual void signal(pid_t pid, int sig) = 0;
  // Collect children that have exited, without blocking.
  virtual std::vector<Reaped> reap(const std::vector<pid_t>& pids) = 0;
  // Whether the child is stopped (SIGSTOP, SIGTSTP, …; not a debugger's trace stop).
  virtual bool stopped(pid_t /*pid*/) { return false; }
};

class Guardian;

// The real runner: Boost.Process for the spawn, setpgid + PR_SET_PDEATHSIG in the child, and a
// guardian process (guardian.hpp), started with the first spawn or when given the run folder,
// that kills each child's group if the launcher dies without reaping the child: even a SIGKILLed
// launcher leaves nothing the ranks started. A group is watched from the child's exec until reap() returns it.
class PosixProcessRunner : public ProcessRunner {
 public:
  PosixProcessRunner();
  ~PosixProcessRunner() override;  // releases the guardian: groups not reaped yet are killed
  Spawned spawn(const SpawnRequest& req) override;
  void signal(pid_t pid, int sig) override;
  // A child found exited has its process group SIGKILLed before it is reaped (while its zombie
  // still holds the group's number): what it left in its group does not outlive it.
  std::vector<Reaped> reap(const std::vector<pid_t>& pids) override;
  bool stopped(pid_t pid) override;  // state 'T' in /proc/<pid>/stat
  // The launcher's private run folder: the guardian removes it if the launcher dies first. Starts
  // the guardian now, not at the first spawn: an agent waits in the rendezvous (minutes) before
  // its ranks run, and a launcher ended there (SIGTERM, its ssh connection closed) left the folder.
  void remove_on_launcher_death(const std::string& folder);

 private:
  std::unique_ptr<Guardian> guardian_;
};

}  // namespace mtrain::launch
