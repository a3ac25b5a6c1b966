#include "lib/topology/filter.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::topology {

namespace {

struct Term {
  std::string host;
  bool all_slots = true;
  std::vector<int> slots;
};

std::string known_hosts(const Inventory& inv) {
  std::vector<std::string> names;
  for (const auto& h : inv) names.push_back(h.host);
  return str::join(names, ", ");
}

// Parse and check every term against the inventory; errors carry the 1-based column.
std::vector<Term> parse(const Inventory& inv, const std::string& filter, const std::string& what) {
  if (str::trim(filter).empty())
    throw Error(fmt::format("{} is empty", what), "Write it as HOST[:SLOT,SLOT][@HOST…], e.g. localhost:0,2.");
  std::vector<Term> terms;
  size_t col = 1;
  for (const auto& node : str::split(filter, '@')) {
    Term t;
    size_t colon = node.find(':');
    t.host = node.substr(0, colon);
    if (t.host.empty())
      throw parse_error(what, filter, col, "missing host name", "Write HOST or HOST:SLOT,SLOT; separate hosts with @.");
    const HostSlots* h = find_host(inv, t.host);
    if (!h)
      throw parse_error(what, filter, col, fmt::format("unknown host '{}'", t.host),
                        fmt::format("Known hosts: {}.", known_hosts(inv)));
    if (colon != std::string::npos) {
      t.all_slots = false;
      size_t scol = col + colon + 1;
      std::string list = node.substr(colon + 1);
      for (const auto& field : str::split(list, ',')) {
        auto v = str::parse_uint(field);
        if (!v)
          throw parse_error(what, filter, scol,
                            field.empty() ? "empty slot" : fmt::format("'{}' is not a slot index", field),
                            "Slots are GPU indices such as 0 or 3, separated by commas.");
        int slot = static_cast<int>(*v);
        if (std::find(h->slots.begin(), h->slots.end(), slot) == h->slots.end())
          throw parse_error(what, filter, scol, fmt::format("host '{}' has no slot {}", t.host, slot),
                            fmt::format("Its slots are {}.", h->slots.empty() ? std::string("none") : [&] {
                              std::vector<std::string> s;
                              for (int x : h->slots) s.push_back(std::to_string(x));
                              return str::join(s, ",");
                            }()));
        t.slots.push_back(slot);
        scol += field.size() + 1;
      }
    }
    terms.push_back(std::move(t));
    col += node.size() + 1;
  }
  return terms;
}

Inventory in_inventory_order(const Inventory& inv, const std::map<std::string, std::set<int>>& kept) {
  Inventory out;
  for (const auto& h : inv) {
    auto it = kept.find(h.host);
    if (it == kept.end() || it->second.empty()) continue;
    HostSlots hs = h;
    hs.slots.assign(it->second.begin(), it->second.end());
    out.push_back(std::move(hs));
  }
  return out;
}

}  // namespace

Inventory apply_include(const Inventory& inv, const std::string& filter) {
  std::map<std::string, std::set<int>> kept;
  for (const auto& t : parse(inv, filter, "--include")) {
    auto& set = kept[t.host];
    const auto& slots = t.all_slots ? find_host(inv, t.host)->slots : t.slots;
    set.insert(slots.begin(), slots.end());
  }
  Inventory out = in_inventory_order(inv, kept);
  if (out.empty())
    throw Error(fmt::format("--include '{}' selects no slots", filter), "Name at least one host with slots.");
  return out;
}

Inventory apply_exclude(const Inventory& inv, const std::string& filter) {
  std::map<std::string, std::set<int>> kept;
  for (const auto& h : inv) kept[h.host].insert(h.slots.begin(), h.slots.end());
  for (const auto& t : parse(inv, filter, "--exclude")) {
    auto& set = kept[t.host];
    if (t.all_slots) set.clear();
    for (int s : t.slots) set.erase(s);
  }
  Inventory out = in_inventory_order(inv, kept);
  if (out.empty())
    throw Error(fmt::format("--exclude '{}' leaves no slots", filter), "Exclude fewer hosts or slots.");
  return out;
}

Inventory select_hosts(const Inventory& inv, const HostSelection& sel) {
  bool counts = sel.num_nodes >= 0 || sel.num_gpus >= 0;
  int given = !sel.include.empty() + !sel.exclude.empty() + counts;
  if (given > 1) {
    std::vector<std::string> names;
    if (!sel.include.empty()) names.push_back("--include");
    if (!sel.exclude.empty()) names.push_back("--exclude");
    if (counts) names.push_back("--num-nodes/--num-gpus");
    throw Error(fmt::format("{} select hosts in different ways and cannot be combined", str::join(names, " and ")),
                "Use one of them (DeepSpeed's launcher has the same rule).");
  }
  if (!sel.include.empty()) return apply_include(inv, sel.include);
  if (!sel.exclude.empty()) return apply_exclude(inv, sel.exclude);
  Inventory out = inv;
  if (sel.num_nodes == 0 || sel.num_gpus == 0)
    throw Error(sel.num_nodes == 0 ? "--num-nodes 0 selects no host" : "--num-gpus 0 selects no slot",
                "Give at least 1.");
  if (sel.num_nodes > 0) {
    if (sel.num_nodes > static_cast<int>(inv.size()))
      throw Error(fmt::format("--num-nodes {} asks for more hosts than the {} listed ({})", sel.num_nodes, inv.size(),
                              known_hosts(inv)),
                  "Lower --num-nodes or add hosts to the hostfile.");
    out.resize(static_cast<size_t>(sel.num_nodes));
  }
  if (sel.num_gpus > 0) {
    for (auto& h : out) {
      if (sel.num_gpus > static_cast<int>(h.slots.size()))
        throw Error(fmt::format("--num-gpus {}: host '{}' has only {} slot{}", sel.num_gpus, h.host, h.slots.size(),
                                h.slots.size() == 1 ? "" : "s"),
                    "Lower --num-gpus or give the host more slots in the hostfile.");
      h.slots.resize(static_cast<size_t>(sel.num_gpus));
    }
  }
  return out;
}

}  // namespace mtrain::topology
