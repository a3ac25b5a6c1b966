#include "mtrain/trainer/strategy/strategy.hpp"

#include "mtrain/core/error.hpp"

namespace mtrain::trainer {

std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& o,
                                        Communicator& comm) {
  if (name == "ddp") return make_ddp(o, comm);
  throw Error("strategy '" + name + "' is not part of this trainer build yet",
              "use --strategy ddp (ZeRO and FSDP arrive with the sharded strategies)");
}

std::pair<int64_t, int64_t> even_split(int64_t n, int world, int rank) {
  return {n * rank / world, n * (rank + 1) / world};
}

}  // namespace mtrain::trainer
