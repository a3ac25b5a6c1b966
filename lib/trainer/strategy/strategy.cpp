#include "lib/trainer/strategy/strategy.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::trainer {

std::unique_ptr<Strategy> make_strategy(config::StrategyName name, const StrategyOptions& o,
                                        Communicator& comm) {
  switch (name) {
    case config::StrategyName::Ddp: return make_ddp(o, comm);
    case config::StrategyName::Fsdp: return make_fsdp(o, comm);
    case config::StrategyName::Zero1:
    case config::StrategyName::Zero2:
    case config::StrategyName::Zero3: return make_zero(config::zero_stage(name), o, comm);
  }
  throw RuntimeFailure(fmt::format("strategy '{}' has no implementation", config::to_string(name)), "");
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& o,
                                        Communicator& comm) {
  return make_strategy(config::strategy_from_text(name), o, comm);
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
