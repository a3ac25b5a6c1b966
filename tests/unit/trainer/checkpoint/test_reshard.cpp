// Resharding: a checkpoint saved by one strategy at one world size loads into every strategy
// this build has at other world sizes — each piece the loading rank holds equals the saved
// range, the optimiser step count is restored, and the consolidated weights equal model.pt.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "lib/core/error.hpp"
#include "lib/trainer/checkpoint/checkpointer.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;

namespace {

std::vector<std::string> available_strategies(const json& base) {
  std::vector<std::string> out;
  for (const std::string name : {"ddp", "zero1", "zero2", "zero3", "fsdp"}) {
    json j = base;
    mtrain::config::set(j, "strategy", name);
    bool ok = true;
    run_ranks(1, [&](Communicator& comm) {
      try {
        make_strategy(name, train_job_from_json(j).strat, comm);
      } catch (const mtrain::Error&) {
        ok = false;
      }
    });
    if (ok) out.push_back(name);
  }
  return out;
}

void check_loads(const json& base, const std::string& dir, const std::string& strategy, int world,
                 const std::map<std::string, at::Tensor>& model) {
  json j = base;
  mtrain::config::set(j, "strategy", strategy);
  const TrainJob tj = train_job_from_json(j);
  const auto& spec = tj.model;
  const auto& opts = tj.strat;
  run_ranks(world, [&](Communicator& comm) {
    auto m = make_model(spec, 99);  // other initial weights: only the load can make them equal
    auto s = make_strategy(strategy, opts, comm);
    s->setup(m);
    CheckpointReader reader(dir);
    s->load_state(reader);
    RANK_CHECK(s->optimizer_steps() == reader.manifest().step);
    int64_t model_pieces = 0;
    for (const auto& p : s->state_pieces()) {
      if (!reader.has(p.name)) {
        RANK_CHECK(p.name.rfind("model/", 0) != 0);  // every parameter must be in the checkpoint
        continue;
      }
      model_pieces += p.name.rfind("model/", 0) == 0;
      const at::Tensor want = reader.read(p.name, p.offset, p.data.numel()).to(p.data.scalar_type());
      const at::Tensor got = p.data.detach().reshape({-1}).cpu();
      const bool same = at::equal(got, want);
      if (!same) {
        std::lock_guard<std::mutex> lock(catch_mutex());
        INFO(strategy << " world " << world << " rank " << comm.rank() << " piece " << p.name);
        CHECK(same);
      }
    }
    RANK_CHECK(model_pieces > 0);
    const auto params = s->consolidated_parameters();
    if (comm.rank() == 0) {
      RANK_REQUIRE(params.size() == model.size());
      for (const auto& [name, t] : params) RANK_CHECK(at::equal(t.cpu(), model.at(name)));
    }
  });
}

}  // namespace

TEST_CASE("checkpoints reshard across world sizes and strategies", "[checkpoint][reshard]") {
  at::set_num_threads(1);
  const auto base_dir = fresh_dir("reshard");
  json base = small_job(base_dir, "mlp");
  mtrain::config::set(base, "model.hidden", 31);  // Ψ = 599: not divisible by 2, 3 or 4
  mtrain::config::set(base, "train.max_steps", 3);
  mtrain::config::set(base, "checkpoint.interval", 0);
  const auto strategies = available_strategies(base);
  REQUIRE(!strategies.empty());
  WARN("strategies in this build: " << strategies.size());
  for (const auto& saver : strategies) {
    const fs::path d = base_dir / ("saved_by_" + saver);
    json j = base;
    mtrain::config::set(j, "strategy", saver);
    mtrain::config::set(j, "train.work_dir", d.string());
    run_job(j, 2);
    const auto ck = complete_checkpoints((d / "checkpoints").string());
    REQUIRE(ck.size() == 1);
    const auto model = load_dict(d / "model.pt");
    for (const auto& loader : strategies) {
      for (int world : {1, 3, 4}) {
        INFO("saved by " << saver << " at world 2, loaded by " << loader << " at world " << world);
        check_loads(base, ck[0].second, loader, world, model);
      }
    }
  }
}
