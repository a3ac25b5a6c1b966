#pragma once
// Running the real `mtrain` binary from e2e tests; every command is bounded by timeout(1).
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace e2e {

struct Run {
  int rc = -1;
  std::string out;  // stdout and stderr together
};

inline Run run(const std::string& cmd, int timeout_s = 60) {
  Run r;
  const std::string full = "timeout " + std::to_string(timeout_s) + " sh -c '" + cmd + "' 2>&1";
  FILE* p = ::popen(full.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string mtrain() { return std::string(MTRAIN_BIN_DIR) + "/mtrain"; }
inline std::string data(const std::string& rel) { return std::string(MTRAIN_SOURCE_DIR) + "/tests/data/config/" + rel; }

inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct TempDir {
  std::string path;
  explicit TempDir(const std::string& tag) : path("/tmp/mtrain_e2e_" + tag + "_" + std::to_string(::getpid())) {
    run("rm -rf " + path + " && mkdir -p " + path);
  }
  ~TempDir() { run("rm -rf " + path); }
};

}  // namespace e2e
