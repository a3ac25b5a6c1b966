#include "lib/rendezvous/etcd_options.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::rendezvous {

std::string etcd_prefix_end(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xff) prefix.pop_back();
  if (prefix.empty()) return std::string(1, '\0');
  prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

EtcdMembers parse_etcd_members(const std::string& text, const std::string& what) {
  EtcdMembers out;
  size_t https = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    for (const std::string scheme : {"http://", "https://"})
      if (part.rfind(scheme, 0) == 0) {
        part = part.substr(scheme.size());
        if (scheme == "https://") ++https;
      }
    if (part.empty())
      throw Error(fmt::format("{} '{}': an empty member in the list", what, text),
                  "give the etcd members as host1:2379,host2:2379,host3:2379");
    Endpoint ep = parse_endpoint(part, what);
    const bool has_port =
        part.back() != ']' &&
        part.find(':', part.rfind(']') == std::string::npos ? 0 : part.rfind(']')) != std::string::npos;
    if (!has_port) ep.port = kDefaultEtcdPort;
    out.endpoints.push_back(ep);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (https > 0 && https != out.endpoints.size())
    throw Error(
        fmt::format("{} '{}': some members are https:// and some not", what, text),
        "one job speaks to every member of the cluster the same way: write https:// before each, or before none");
  out.https = https > 0;
  return out;
}

std::vector<Endpoint> parse_etcd_endpoints(const std::string& text, const std::string& what) {
  return parse_etcd_members(text, what).endpoints;
}

}  // namespace mtrain::rendezvous
