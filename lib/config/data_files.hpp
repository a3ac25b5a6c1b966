#pragma once
// The files a job's data settings name, checked by the launcher on the host whose ranks read
// them, before any rank starts: a missing file or a token file whose size disagrees with its
// header fails with one paragraph and exit 2 instead of a failure in every rank. Reads at most
// the first 1024 bytes of each file (never its tokens), so it costs the same for any corpus size.
#include "mtrain/config/registry.hpp"

namespace mtrain::config {

// Throws mtrain::Error (exit 2) naming the setting and the file. `job`: the resolved nested job.
void check_data_files(const json& job);

}  // namespace mtrain::config
