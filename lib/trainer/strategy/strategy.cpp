#include "mtrain/trainer/strategy/strategy.hpp"

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/trainer/strategy/precision.hpp"

namespace mtrain::trainer {

std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& o,
                                        Communicator& comm) {
  precision_policy(o.precision);  // validates train.precision
  const int stage = o.zero.stage;
  if (name == "zero" || name == "zero1" || name == "zero2" || name == "zero3") {
    const int named = name == "zero" ? stage : name.back() - '0';
    if (name != "zero" && stage != 0 && stage != named) {
      throw Error(fmt::format("zero.stage is {} but strategy is '{}'", stage, name),
                  fmt::format("set strategy to zero{} (or zero.stage to 0 to follow strategy)", stage));
    }
    if (named == 0) throw Error("strategy 'zero' needs zero.stage 1, 2 or 3", "set zero.stage");
    return make_zero(named, o, comm);
  }
  if (stage != 0) {
    throw Error(fmt::format("zero.stage is {} but strategy is '{}'", stage, name),
                fmt::format("set strategy to zero{} (or zero.stage to 0)", stage));
  }
  if (name == "ddp") return make_ddp(o, comm);
  if (name == "fsdp") return make_fsdp(o, comm);
  throw Error("strategy '" + name + "' is unknown", "use ddp, zero1, zero2, zero3 or fsdp");
}

std::vector<ParameterExport> Strategy::export_parameters() {
  std::vector<ParameterExport> out;
  for (auto& [name, t] : consolidated_parameters()) {
    at::Tensor d = t;
    out.push_back({name, d.sizes().vec(), d.scalar_type(), [d] { return d; }});
  }
  return out;
}

std::pair<int64_t, int64_t> even_split(int64_t n, int world, int rank) {
  return {n * rank / world, n * (rank + 1) / world};
}

}  // namespace mtrain::trainer
