#pragma once
// Checks made before anything starts, so bad input fails with one clear paragraph and exit 2.
#include <string>

#include "mtrain/launch/host_probe.hpp"

namespace mtrain::launch {

// The path to execute for `program` (searched on PATH like a shell does); throws if it does
// not exist or is not executable.
std::string resolve_program(const std::string& program, const EnvMap& env);

// A free TCP port on `addr`, chosen by the kernel.
int pick_free_port(const std::string& addr);

// Throws if `port` on `addr` cannot be bound, naming the process that holds it when visible.
void check_port_free(const std::string& addr, int port);

// "pid 1234 (python3)" for the process listening on `port`, or "" if not visible.
std::string port_holder(int port);

}  // namespace mtrain::launch
