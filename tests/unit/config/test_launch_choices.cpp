// The launcher's choice settings (lib/config/launch_choices.hpp): one name table each.
#include <catch2/catch.hpp>

#include "choice_checks.hpp"
#include "lib/config/launch_choices.hpp"

using namespace mtrain::config;
using mtrain::testing::check_choice_table;

TEST_CASE("launch choices: launch.launcher", "[config][choices]") {
  check_choice_table<LauncherKind>("launch.launcher", {LauncherKind::Auto, LauncherKind::Local, LauncherKind::Ssh,
                                                       LauncherKind::Slurm, LauncherKind::SlurmTask});
  CHECK(to_string(LauncherKind::SlurmTask) == "slurm-task");
}

TEST_CASE("launch choices: launch.device", "[config][choices]") {
  check_choice_table<DeviceKind>("launch.device", {DeviceKind::Auto, DeviceKind::Cpu, DeviceKind::Gpu});
}

TEST_CASE("launch choices: launch.rdzv_backend", "[config][choices]") {
  check_choice_table<RdzvBackend>("launch.rdzv_backend", {RdzvBackend::Static, RdzvBackend::Mtrain, RdzvBackend::C10d, RdzvBackend::Etcd});
}

TEST_CASE("launch choices: launch.scale_up", "[config][choices]") {
  check_choice_table<ScaleUp>("launch.scale_up", {ScaleUp::checkpoint, ScaleUp::now, ScaleUp::off});
}

TEST_CASE("launch choices: launch.pass_config", "[config][choices]") {
  check_choice_table<PassConfig>("launch.pass_config", {PassConfig::None, PassConfig::Deepspeed, PassConfig::Accelerate});
}

TEST_CASE("launch choices: launch.format", "[config][choices]") {
  check_choice_table<PlanFormat>("launch.format", {PlanFormat::Text, PlanFormat::Json});
}

TEST_CASE("launch choices: slurm.pattern has long names for its two patterns", "[config][choices]") {
  check_choice_table<SlurmPattern>("slurm.pattern", {SlurmPattern::AgentPerNode, SlurmPattern::TaskPerGpu});
  CHECK(choice_names<SlurmPattern>() == std::vector<std::string>{"agent", "task", "agent-per-node", "task-per-gpu"});
  CHECK(parse_choice<SlurmPattern>("task-per-gpu") == SlurmPattern::TaskPerGpu);
  CHECK(parse_choice<SlurmPattern>("agent-per-node") == SlurmPattern::AgentPerNode);
  CHECK(to_string(SlurmPattern::TaskPerGpu) == "task");  // the short name is the one printed
}
