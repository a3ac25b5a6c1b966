#include "lib/config/master_port.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::config {

MasterPort master_port_from_text(std::string_view text, const std::string& key) {
  if (text == "auto") return MasterPort::automatic();
  const auto v = str::parse_uint(text);
  if (!v || *v > 65535)
    throw UsageError(fmt::format("'{}' is not a TCP port", text), "Give 1-65535, or 0/auto for a free port.").at(key);
  return *v == 0 ? MasterPort::automatic() : MasterPort::port(static_cast<int>(*v));
}

std::string to_string(const MasterPort& p) { return p.pick_free ? "auto" : std::to_string(p.number); }

}  // namespace mtrain::config
