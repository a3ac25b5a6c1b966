#pragma once
// The small grammars of the rendezvous flags: --rdzv-endpoint HOST[:PORT] ([v6]:PORT for IPv6)
// and --nnodes N or MIN:MAX.
#include <cstdint>
#include <string>

#include "lib/core/node_count.hpp"

namespace mtrain::rendezvous {

inline constexpr uint16_t kDefaultRdzvPort = 29400;

struct Endpoint {
  std::string host;  // name or address, without IPv6 brackets
  uint16_t port = kDefaultRdzvPort;
  std::string str() const;  // "host:port" / "[v6]:port"
};

// Errors are mtrain::Error naming `what` and the column. Port 0 is allowed only when
// `allow_port_zero` (tests ask the OS for a free port).
Endpoint parse_endpoint(const std::string& text, const std::string& what = "--rdzv-endpoint",
                        bool allow_port_zero = false);

// --nnodes: the grammar lives in lib/core (node_count.hpp), shared with the registry's check.
using mtrain::NodeCount;
using mtrain::parse_nnodes;

}  // namespace mtrain::rendezvous
