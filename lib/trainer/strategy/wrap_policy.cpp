#include "lib/trainer/strategy/wrap_policy.hpp"

#include <algorithm>
#include <map>

#include "lib/core/error.hpp"

namespace mtrain::trainer {

namespace {

std::string owner_of(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? std::string() : name.substr(0, dot);
}

bool under(const std::string& name, const std::string& prefix) {
  return prefix.empty() || (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
                            name[prefix.size()] == '.');
}

}  // namespace

std::vector<UnitPlan> bucket_units(const ParamList& p, int64_t cap_elements) {
  std::vector<UnitPlan> out;
  UnitPlan cur;
  int64_t cur_n = 0;
  for (size_t k = p.names.size(); k-- > 0;) {
    if (!cur.params.empty() && cur_n + p.numels[k] > cap_elements) {
      out.push_back(std::move(cur));
      cur = UnitPlan{};
      cur_n = 0;
    }
    cur.params.push_back(k);
    cur_n += p.numels[k];
  }
  if (!cur.params.empty()) out.push_back(std::move(cur));
  for (size_t u = 0; u < out.size(); ++u) {
    std::sort(out[u].params.begin(), out[u].params.end());
    out[u].label = "bucket" + std::to_string(u);
  }
  return out;
}

std::vector<UnitPlan> module_units(const ParamList& p, int64_t persistence_threshold,
                                   const std::vector<std::string>& leaf_prefixes) {
  std::vector<UnitPlan> out;
  UnitPlan persistent;
  persistent.persistent = true;
  persistent.label = "persistent";
  for (size_t k = 0; k < p.names.size(); ++k) {
    if (p.numels[k] < persistence_threshold) {
      persistent.params.push_back(k);
      continue;
    }
    std::string owner = owner_of(p.names[k]);
    for (const auto& leaf : leaf_prefixes)
      if (under(p.names[k], leaf)) owner = leaf;
    if (out.empty() || out.back().label != owner) {
      out.push_back(UnitPlan{});
      out.back().label = owner;
    }
    out.back().params.push_back(k);
  }
  if (!persistent.params.empty()) out.push_back(std::move(persistent));
  return out;
}

std::vector<UnitPlan> fsdp_units(const ParamList& p, config::WrapPolicy policy,
                                 const std::vector<std::string>& block_prefixes,
                                 int64_t min_num_params) {
  std::vector<int> unit_of(p.names.size(), -1);
  std::vector<UnitPlan> out;
  auto wrap = [&](const std::string& label, const std::vector<size_t>& members) {
    if (members.empty()) return;
    UnitPlan u;
    u.label = label;
    for (size_t k : members) {
      unit_of[k] = static_cast<int>(out.size());
      u.params.push_back(k);
    }
    out.push_back(std::move(u));
  };
  switch (policy) {
    case config::WrapPolicy::Layer:
      for (const auto& prefix : block_prefixes) {
        std::vector<size_t> members;
        for (size_t k = 0; k < p.names.size(); ++k)
          if (unit_of[k] < 0 && under(p.names[k], prefix)) members.push_back(k);
        wrap(prefix, members);
      }
      break;
    case config::WrapPolicy::Size: {
      // Every dotted module prefix, deepest first: a subtree whose still-unwrapped parameters
      // reach min_num_params becomes a unit (children are considered before their parents).
      std::map<std::string, int> depth;
      for (const auto& n : p.names) {
        for (std::string m = owner_of(n); !m.empty(); m = owner_of(m))
          depth[m] = static_cast<int>(std::count(m.begin(), m.end(), '.'));
      }
      std::vector<std::string> modules;
      for (const auto& [m, d] : depth) modules.push_back(m);
      std::stable_sort(modules.begin(), modules.end(),
                       [&](const std::string& a, const std::string& b) { return depth[a] > depth[b]; });
      for (const auto& m : modules) {
        std::vector<size_t> members;
        int64_t n = 0;
        for (size_t k = 0; k < p.names.size(); ++k)
          if (unit_of[k] < 0 && under(p.names[k], m)) members.push_back(k), n += p.numels[k];
        if (n >= min_num_params) wrap(m, members);
      }
      std::sort(out.begin(), out.end(),
                [](const UnitPlan& a, const UnitPlan& b) { return a.params.front() < b.params.front(); });
      break;
    }
    case config::WrapPolicy::None: break;
  }
  std::vector<size_t> rest;
  for (size_t k = 0; k < p.names.size(); ++k)
    if (unit_of[k] < 0) rest.push_back(k);
  if (!rest.empty()) {
    UnitPlan root;
    root.label = "root";
    root.pinned = true;
    root.params = rest;
    out.push_back(std::move(root));
  }
  return out;
}

}  // namespace mtrain::trainer
