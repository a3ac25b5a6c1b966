#include "lib/launch/launch_probes.hpp"
#include "lib/core/work_dir_lock.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "lib/config/launch_checks.hpp"
#include "lib/launch/net_address.hpp"
#include "lib/launch/preflight.hpp"
#include "lib/rendezvous/token.hpp"
#include "lib/topology/hostfile.hpp"

namespace mtrain::launch {

plan::HostFacts SystemLaunchProbes::host(const EnvMap& env) { return probe_host(env); }

int SystemLaunchProbes::stat_error(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? 0 : errno;
}

topology::Inventory SystemLaunchProbes::load_hostfile(const std::string& path) { return topology::load_hostfile(path); }

bool SystemLaunchProbes::names_this_machine(const std::string& host) { return launch::names_this_machine(host); }

std::string SystemLaunchProbes::route_source_address(const std::string& host, int port) {
  return launch::route_source_address(host, port);
}

int SystemLaunchProbes::free_port(const std::string& addr) { return pick_free_port(addr); }

std::string SystemLaunchProbes::resolve_program(const std::string& program, const EnvMap& env) {
  return launch::resolve_program(program, env);
}

bool SystemLaunchProbes::readable(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

void SystemLaunchProbes::check_port_free(const std::string& addr, int port) { launch::check_port_free(addr, port); }

void SystemLaunchProbes::check_job(const std::string& job_spec_json, long long world) {
  config::check_before_launch(nlohmann::json::parse(job_spec_json), world);
}

void SystemLaunchProbes::check_work_dir_free(const std::string& work_dir) { mtrain::check_work_dir_free(work_dir); }

std::string SystemLaunchProbes::new_job_id() { return launch::new_job_id(); }

std::string SystemLaunchProbes::random_token() { return rendezvous::generate_token(); }

void SystemLaunchProbes::note(const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }

}  // namespace mtrain::launch
