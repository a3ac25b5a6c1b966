#pragma once
// LaunchProbes as a test says the system is (decide_launch and its parts: no hostfile read, no
// port bound, nothing started); records what was asked.
#include <cerrno>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/core/error.hpp"
#include "lib/launch/launch_decision.hpp"

namespace mtrain::testing {

using launch::EnvMap;
using launch::LaunchProbes;

class FakeProbes : public LaunchProbes {
 public:
  plan::HostFacts facts;
  std::map<std::string, topology::Inventory> hostfiles;  // path → its hosts (others: ENOENT)
  std::set<std::string> this_machine{"localhost", "node-a"};
  std::map<std::string, std::string> routes;  // host → this machine's address towards it
  std::set<std::string> programs{"python3", "/usr/bin/python3", "/bin/train", "/opt/mtrain-worker"};
  std::set<std::string> readable_files{"train.py"};
  std::set<int> taken_ports;
  int next_free_port = 31000;
  std::vector<std::string> notes, asked;
  std::vector<long long> jobs_checked;
  std::vector<std::string> work_dirs_checked;

  FakeProbes() {
    facts.hostname = "node-a";
    facts.cpu_count = 8;
  }
  plan::HostFacts host(const EnvMap&) override { return facts; }
  int stat_error(const std::string& path) override {
    asked.push_back("stat " + path);
    return hostfiles.count(path) ? 0 : ENOENT;
  }
  topology::Inventory load_hostfile(const std::string& path) override {
    if (!hostfiles.count(path)) throw Error(path + ": cannot read the hostfile");
    return hostfiles.at(path);
  }
  bool names_this_machine(const std::string& host) override { return this_machine.count(host) > 0; }
  std::string route_source_address(const std::string& host, int) override {
    auto it = routes.find(host);
    return it == routes.end() ? "" : it->second;
  }
  int free_port(const std::string&) override { return next_free_port++; }
  std::string resolve_program(const std::string& program, const EnvMap&) override {
    if (!programs.count(program)) throw Error(program + " was not found on PATH");
    return program[0] == '/' ? program : "/usr/bin/" + program;
  }
  bool readable(const std::string& path) override { return readable_files.count(path) > 0; }
  void check_port_free(const std::string& addr, int port) override {
    asked.push_back("port " + addr + ":" + std::to_string(port));
    if (taken_ports.count(port)) throw Error("port " + std::to_string(port) + " is taken");
  }
  void check_job(const std::string&, long long world) override { jobs_checked.push_back(world); }
  void check_work_dir_free(const std::string& dir) override { work_dirs_checked.push_back(dir); }
  std::string new_job_id() override { return "mtrain-0000beef"; }
  std::string random_token() override { return "r4nd0mr4nd0mr4nd0mXYZ"; }
  void note(const std::string& line) override { notes.push_back(line); }
};

}  // namespace mtrain::testing
