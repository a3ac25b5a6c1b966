#pragma once
// The real system's answers to decide_launch's questions: what run_launch passes it.
#include "lib/launch/launch_decision.hpp"

namespace mtrain::launch {

class SystemLaunchProbes : public LaunchProbes {
 public:
  plan::HostFacts host(const EnvMap& env) override;
  int stat_error(const std::string& path) override;
  topology::Inventory load_hostfile(const std::string& path) override;
  bool names_this_machine(const std::string& host) override;
  std::string route_source_address(const std::string& host, int port) override;
  int free_port(const std::string& addr) override;
  std::string resolve_program(const std::string& program, const EnvMap& env) override;
  bool readable(const std::string& path) override;
  void check_port_free(const std::string& addr, int port) override;
  void check_job(const std::string& job_spec_json, long long world) override;
  void check_work_dir_free(const std::string& work_dir) override;
  std::string new_job_id() override;
  std::string random_token() override;
  void note(const std::string& line) override;
};

}  // namespace mtrain::launch
