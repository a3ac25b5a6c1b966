#pragma once
// How the sharded engine cuts a model's parameters into units (the groups that are flattened,
// sharded, gathered and reduced together). Pure functions of parameter names and sizes, so they
// are the same on every rank.
//   * buckets (ZeRO-1/2, DDP in mixed precision): consecutive parameters in reverse
//     registration order — the order backward produces gradients — up to a cap in elements.
//   * modules (ZeRO-3): the parameters a module owns directly (same dotted prefix), as DeepSpeed
//     fetches per submodule, or a whole leaf module's; parameters below the persistence
//     threshold form one persistent unit that stays gathered.
//   * FSDP: one unit per block prefix (wrap_policy layer), per module subtree of at least
//     min_num_params not already wrapped (size, torch's size_based_auto_wrap_policy), or the
//     whole model (none); what no unit took is the root unit, pinned through forward.
#include <cstdint>
#include <string>
#include <vector>

#include "lib/config/sharding_choices.hpp"

namespace mtrain::trainer {

struct UnitPlan {
  std::vector<size_t> params;  // indices into the strategy's parameter list, ascending
  std::string label;
  bool persistent = false;  // never freed: gathered for the whole run
  bool pinned = false;      // FSDP root: kept gathered until the forward ends
};

struct ParamList {
  std::vector<std::string> names;  // named_parameters() keys
  std::vector<int64_t> numels;
};

std::vector<UnitPlan> bucket_units(const ParamList& p, int64_t cap_elements);
// leaf_prefixes: modules fetched whole, one unit each (DeepSpeed's z3 leaf modules; a
// TorchScript model's fsdp.wrap_module_types blocks), their parameters not split per submodule.
std::vector<UnitPlan> module_units(const ParamList& p, int64_t persistence_threshold,
                                   const std::vector<std::string>& leaf_prefixes = {});
// layer: one unit per block prefix; size: subtrees of at least min_num_params; none: the root.
std::vector<UnitPlan> fsdp_units(const ParamList& p, config::WrapPolicy policy,
                                 const std::vector<std::string>& block_prefixes,
                                 int64_t min_num_params);

}  // namespace mtrain::trainer
