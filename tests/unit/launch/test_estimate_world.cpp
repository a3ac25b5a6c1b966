// `mtrain estimate` counts ranks and GPUs as `mtrain launch` does (issue 41 item 1): the same
// resolved job and the same host facts give the estimate the launch plan's world. Before, the
// estimate took --nproc-per-node cpu as 1 rank and counted GPUs with nvidia-smi, blind to
// CUDA_VISIBLE_DEVICES.
#include <catch2/catch.hpp>

#include "lib/config/registry.hpp"
#include "resolved_job.hpp"
#include "lib/launch/estimate_world.hpp"
#include "lib/launch/host_probe.hpp"
#include "lib/launch/launch_settings.hpp"

using namespace mtrain;

namespace {

// The launch options of that job, as `mtrain launch` and `mtrain estimate` take them.
launch::LaunchOptions options_of(const config::Resolved& r) {
  launch::LaunchOptions o;
  launch::apply_launch_settings(r, o);
  return o;
}

// The world the launcher plans for that job on a host with `facts`.
int launch_world(const config::Resolved& r, const plan::HostFacts& facts) {
  launch::LaunchOptions o = options_of(r);
  o.plan.program = {"train.py"};
  return plan::build_plan(o.plan, facts).world_size;
}

plan::HostFacts facts(int cores, const launch::EnvMap& env) {
  plan::HostFacts f = launch::probe_host(env);
  f.cpu_count = cores;
  return f;
}

}  // namespace

TEST_CASE("estimate --nproc-per-node cpu: one rank per core, the launcher's count", "[launch][estimate_world]") {
  const auto r = testing::resolved_job({{"launch.nproc_per_node", "cpu"}});
  const auto f = facts(6, {{"CUDA_VISIBLE_DEVICES", "0,1"}});
  const auto o = launch::estimate_options(options_of(r), f);
  CHECK(launch_world(r, f) == 6);
  CHECK(o.world == 6);
  CHECK(o.ranks_per_node == 6);
  CHECK(o.gpus == 0);  // CPU ranks: the GPUs are not theirs
}

TEST_CASE("CUDA_VISIBLE_DEVICES is the GPU pool of the estimate as of the launch", "[launch][estimate_world]") {
  for (const char* nproc : {"auto", "gpu"}) {
    const auto r = testing::resolved_job({{"launch.nproc_per_node", nproc}});
    for (const char* visible : {"3,1", "2", "0,1,2,3,4"}) {
      const auto f = facts(16, {{"CUDA_VISIBLE_DEVICES", visible}});
      const auto o = launch::estimate_options(options_of(r), f);
      INFO(nproc << " with CUDA_VISIBLE_DEVICES=" << visible);
      CHECK(o.world == launch_world(r, f));
      CHECK(o.gpus == static_cast<int>(f.gpu_pool.size()));
    }
  }
  // Set but empty: no GPU, one CPU rank under auto (both), and gpu refused by both.
  const auto f = facts(16, {{"CUDA_VISIBLE_DEVICES", ""}});
  const auto none = testing::resolved_job({{"launch.nproc_per_node", "auto"}});
  CHECK(launch::estimate_options(options_of(none), f).world == 1);
  CHECK(launch_world(none, f) == 1);
  // --gpus narrows the pool for both.
  const auto two = testing::resolved_job({{"launch.gpus", "1,3"}});
  const auto four = facts(16, {{"CUDA_VISIBLE_DEVICES", "0,1,2,3"}});
  CHECK(launch_world(two, four) == 2);
  CHECK(launch::estimate_options(options_of(two), four).world == 2);
  CHECK(launch::estimate_options(options_of(two), four).gpus == 2);
}

TEST_CASE("estimate with --device cpu counts no GPU, as the launch assigns none", "[launch][estimate_world]") {
  const auto r = testing::resolved_job({{"launch.device", "cpu"}, {"launch.nproc_per_node", "3"}});
  const auto f = facts(8, {{"CUDA_VISIBLE_DEVICES", "0,1"}});
  const auto o = launch::estimate_options(options_of(r), f);
  CHECK(o.gpus == 0);
  CHECK(o.world == 3);
  CHECK(launch_world(r, f) == 3);
}
