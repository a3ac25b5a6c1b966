#pragma once
// SystemProbe: everything `mtrain env` asks the machine, behind one narrow interface, so the
// report (and its warnings) is computed from facts that tests supply in memory (MemoryProbe).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mtrain::envreport {

struct CommandResult {
  bool started = false;  // false: the program is not installed / not executable
  int rc = -1;           // exit code; 124 after the timeout
  std::string out;       // stdout
  std::string err;       // stderr
};

struct NetInterface {
  std::string name;
  bool up = false;
  bool loopback = false;
  std::vector<std::string> addresses;  // IPv4 and IPv6, as text
};

struct FsSpace {
  bool ok = false;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
};

struct Limits {
  uint64_t open_files_soft = 0;  // UINT64_MAX: unlimited
  uint64_t open_files_hard = 0;
};

struct Uname {
  std::string sysname, release, machine, hostname;
};

class SystemProbe {
 public:
  virtual ~SystemProbe() = default;
  virtual std::optional<std::string> read_file(const std::string& path) const = 0;
  // Runs argv[0] looked up on PATH, bounded by timeout_ms; never throws.
  virtual CommandResult run(const std::vector<std::string>& argv, int timeout_ms) const = 0;
  // Full path of a program on PATH, or "".
  virtual std::string which(const std::string& program) const = 0;
  virtual std::map<std::string, std::string> environment() const = 0;
  virtual std::vector<NetInterface> interfaces() const = 0;
  virtual FsSpace space(const std::string& path) const = 0;
  virtual Limits limits() const = 0;
  virtual Uname uname() const = 0;
  virtual int cpu_count() const = 0;  // cores this process may run on
};

// The real machine: /proc, getifaddrs, statvfs, getrlimit, fork/exec with a timeout.
class PosixSystemProbe : public SystemProbe {
 public:
  std::optional<std::string> read_file(const std::string& path) const override;
  CommandResult run(const std::vector<std::string>& argv, int timeout_ms) const override;
  std::string which(const std::string& program) const override;
  std::map<std::string, std::string> environment() const override;
  std::vector<NetInterface> interfaces() const override;
  FsSpace space(const std::string& path) const override;
  Limits limits() const override;
  Uname uname() const override;
  int cpu_count() const override;
};

// The in-memory twin: every answer is a field the test fills in. Commands are looked up by
// their argv joined with spaces; a program is installed when `programs` names it.
class MemoryProbe : public SystemProbe {
 public:
  std::map<std::string, std::string> files;
  std::map<std::string, CommandResult> commands;      // "nvidia-smi --query-gpu=…" → result
  std::map<std::string, std::string> programs;        // name → path
  std::map<std::string, std::string> env;
  std::vector<NetInterface> nics;
  std::map<std::string, FsSpace> spaces;
  Limits lim;
  Uname un{"Linux", "6.1.0-test", "x86_64", "testhost"};
  int cpus = 4;

  std::optional<std::string> read_file(const std::string& path) const override;
  CommandResult run(const std::vector<std::string>& argv, int timeout_ms) const override;
  std::string which(const std::string& program) const override;
  std::map<std::string, std::string> environment() const override { return env; }
  std::vector<NetInterface> interfaces() const override { return nics; }
  FsSpace space(const std::string& path) const override;
  Limits limits() const override { return lim; }
  Uname uname() const override { return un; }
  int cpu_count() const override { return cpus; }
};

}  // namespace mtrain::envreport
