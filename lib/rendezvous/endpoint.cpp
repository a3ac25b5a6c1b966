#include "lib/rendezvous/endpoint.hpp"

#include <cctype>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::rendezvous {

std::string Endpoint::str() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

Endpoint parse_endpoint(const std::string& text, const std::string& what, bool allow_port_zero) {
  const char* hint = "Write HOST:PORT, e.g. worker-0:29400 (or [::1]:29400 for IPv6).";
  if (text.empty()) throw Error(fmt::format("{} is empty", what), hint);
  Endpoint ep;
  std::string port_text;
  size_t port_col = 0;
  if (text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) throw parse_error(what, text, 1, "'[' without a closing ']'", hint);
    ep.host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') throw parse_error(what, text, close + 2, "expected ':' after ']'", hint);
      port_text = text.substr(close + 2);
      port_col = close + 3;
    }
  } else {
    size_t colon = text.rfind(':');
    if (colon != std::string::npos && text.find(':') != colon)
      throw parse_error(what, text, 1, "an IPv6 address needs brackets", hint);
    ep.host = text.substr(0, colon);
    if (colon != std::string::npos) {
      port_text = text.substr(colon + 1);
      port_col = colon + 2;
    }
  }
  if (ep.host.empty()) throw parse_error(what, text, 1, "missing host", hint);
  for (size_t i = 0; i < ep.host.size(); ++i) {
    char c = ep.host[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ':' || c == '%'))
      throw parse_error(what, text, i + 1 + (text[0] == '[' ? 1 : 0),
                        fmt::format("character '{}' is not allowed in a host", c), hint);
  }
  if (port_col) {
    auto p = str::parse_uint(port_text);
    if (!p || *p > 65535 || (*p == 0 && !allow_port_zero))
      throw parse_error(what, text, port_col,
                        port_text.empty() ? std::string("missing port") : fmt::format("'{}' is not a port", port_text),
                        "Ports are 1..65535.");
    ep.port = static_cast<uint16_t>(*p);
  }
  return ep;
}

}  // namespace mtrain::rendezvous
