#pragma once
// The tiny rank program of `mtrain bench launch` (`mtrain __barrier`): every rank reaches one
// barrier over plain TCP and exits. Rank 0 listens on MASTER_ADDR:MASTER_PORT and, once all
// WORLD_SIZE−1 peers have connected and sent their rank (4 bytes), answers each with one byte;
// the others connect (retrying until rank 0 listens) and wait for that byte. No LibTorch, so
// what is timed is the launcher, not a library's start-up.
#include <map>
#include <string>

namespace mtrain::bench {

// Returns 0 once the barrier is passed; throws mtrain::Error (exit 1) on a timeout or a
// malformed environment.
int run_tcp_barrier(const std::map<std::string, std::string>& env, int timeout_ms);

}  // namespace mtrain::bench
