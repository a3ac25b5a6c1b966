#pragma once
// Byte counts as a person reads them ("812 B", "38.19 MiB", "12.3 GiB"): binary units up to PiB.
// The one formatter of sizes for every table and message (the memory ledger, `mtrain estimate`,
// `mtrain env`, the benches).
#include <string>

namespace mtrain {

// Digits after the point for KiB and up (a count of bytes is whole); kAdaptiveDecimals: two below
// 10 of the unit, else one — three significant digits, for tables of mixed sizes.
inline constexpr int kAdaptiveDecimals = -1;
std::string human_bytes(double bytes, int decimals = kAdaptiveDecimals);

}  // namespace mtrain
