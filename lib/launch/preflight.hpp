#pragma once
// Checks made before anything starts, so bad input fails with one clear paragraph and exit 2.
#include <string>
#include <utility>

#include "lib/launch/host_probe.hpp"

namespace mtrain::launch {

// The path to execute for `program` (searched on PATH like a shell does); throws if it does
// not exist or is not executable.
std::string resolve_program(const std::string& program, const EnvMap& env);

// A free TCP port on `addr` for the master (c10d store), outside the kernel's ephemeral range.
// A port from that range (what bind(0) hands out) can be taken in the meantime by any outgoing
// connection, and by the ranks' own connects: a client that connects to 127.0.0.1:P before the
// store listens may be given P as its local port and connect to itself (TCP simultaneous
// open), after which the store's bind fails with "Address already in use". Ports are tried in
// a random order from below the range; bind(0) is the fallback when none is free.
int pick_free_port(const std::string& addr);

// The candidate ports for pick_free_port: [lo, hi] of the range below the ephemeral one
// (`ephemeral_lo`, from /proc/sys/net/ipv4/ip_local_port_range), never below 10000; empty when
// the ephemeral range leaves no room. Pure.
std::pair<int, int> master_port_range(int ephemeral_lo, int ephemeral_hi);

// Throws if `port` on `addr` cannot be bound, naming the process that holds it when visible.
void check_port_free(const std::string& addr, int port);

// "pid 1234 (python3)" for the process listening on `port`, or "" if not visible.
std::string port_holder(int port);

}  // namespace mtrain::launch
