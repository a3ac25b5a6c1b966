#pragma once
// Small text helpers used across modules.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mtrain::str {

std::vector<std::string> split(std::string_view s, char sep);
std::string trim(std::string_view s);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
std::string to_upper(std::string_view s);

// Strict non-negative integer parse: digits only, no sign, no overflow.
std::optional<long long> parse_uint(std::string_view s);

// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to `word`, if it is close enough to be a plausible typo.
std::optional<std::string> closest(std::string_view word, const std::vector<std::string>& candidates);

// Quote one argument for a POSIX shell: the result, pasted into `sh -c`, is exactly `arg`.
std::string shell_quote(std::string_view arg);
std::string shell_join(const std::vector<std::string>& argv);

// Byte offset of the first byte that is not part of well-formed UTF-8 (overlong forms,
// surrogates and code points above U+10FFFF included), or nullopt if all of `s` is valid.
// Text that becomes JSON must be checked first: nlohmann::json::dump throws on invalid UTF-8.
std::optional<size_t> invalid_utf8_at(std::string_view s);

}  // namespace mtrain::str
