#pragma once
// The job token: a shared secret every rendezvous message carries (MTRAIN_RDZV_TOKEN). The
// launcher generates one when the variable is unset and hands it to the agents it starts (over
// ssh, in the environment); a peer that does not present it is refused and disconnected.
#include <string>
#include <string_view>

namespace mtrain::rendezvous {

inline constexpr const char* kTokenEnv = "MTRAIN_RDZV_TOKEN";

// 32 random bytes from the OS entropy source, as 64 lowercase hex characters.
std::string generate_token();

// Comparison whose running time does not depend on where the strings differ.
bool tokens_equal(std::string_view a, std::string_view b);

// The token from MTRAIN_RDZV_TOKEN's value when set and non-empty, else a fresh one. A value
// shorter than 16 characters is an Error (too easy to guess), as is one with spaces or
// control characters (it must survive shell quoting and environment passing unchanged).
std::string token_or_generate(const char* env_value);

}  // namespace mtrain::rendezvous
