#pragma once
// Values of slurm.* settings that are read, not just checked (launch_settings.cpp checks them).
#include <string>

namespace mtrain::config {

// "USR1@90", "B:SIGUSR1@120", "SIGTERM" (60 s), "none" → "USR1@90" form, "" for none. Throws
// std::invalid_argument saying what is wrong.
std::string normalize_slurm_signal(const std::string& text);

}  // namespace mtrain::config
