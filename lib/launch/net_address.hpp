#pragma once
// Which addresses belong to this machine, and which of its addresses another host sees.
#include <string>

namespace mtrain::launch {

// True when `host` (a name or an address) resolves to an address of one of this machine's
// network interfaces (loopback included). Unresolvable names are not local.
bool is_local_address(const std::string& host);

// "localhost", a loopback address, this machine's hostname, or a local interface address.
bool names_this_machine(const std::string& host);

// The address this machine sends from when it talks to host:port (the kernel's route choice;
// no packet is sent). Empty when there is no route or the name does not resolve.
std::string route_source_address(const std::string& host, int port);

}  // namespace mtrain::launch
