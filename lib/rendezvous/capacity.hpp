#pragma once
// How many connections the rendezvous store admits, and the file-descriptor limit behind it.
//
// Every node agent holds one connection for its heartbeats and opens a second, briefly, to
// report a failure; a node that lost its reply reconnects while the server may not have seen
// the old connection close yet. So the store admits 2 per node plus headroom for people's
// probes and unauthenticated peers (which are evicted first when the store is full, see
// server.hpp). The store process also needs descriptors for its own ranks' pipes and files, so
// the connections may use the soft RLIMIT_NOFILE minus a reserve; the server raises the soft
// limit (up to the hard one) before it starts when it is short (the usual default of 1024 would
// otherwise cap a job at ~440 nodes). Only as far as needed: the ranks inherit the limit, and
// some programs walk every descriptor number up to it.
namespace mtrain::rendezvous {

inline constexpr long kReservedDescriptors = 128;
inline constexpr int kConnectionHeadroom = 64;

// Connections wanted for `max_nodes` nodes: 2 per node + kConnectionHeadroom.
int wanted_connections(int max_nodes);

// What the store may admit under a descriptor limit: wanted_connections, but no more than
// fd_limit - kReservedDescriptors (never below 1).
int connection_capacity(int max_nodes, long fd_limit);

// Descriptors a store for `max_nodes` wants: wanted_connections + kReservedDescriptors.
long wanted_fd_limit(int max_nodes);

// Raise this process's soft RLIMIT_NOFILE towards `wanted` (never above the hard limit, never
// lowering it); returns the soft limit in effect afterwards.
long raise_fd_limit(long wanted);

}  // namespace mtrain::rendezvous
