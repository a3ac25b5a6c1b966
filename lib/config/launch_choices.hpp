#pragma once
// The choices of the launcher's settings (launch.*, slurm.pattern), each an enum with ONE name
// table (choice_table.hpp), parsed once where the launch options are built
// (lib/launch/launch_settings.cpp, lib/slurm/job_options.cpp).
#include "lib/config/choice_table.hpp"
#include "lib/config/output_format.hpp"

namespace mtrain::config {

// launch.launcher: how ranks are started (launch.hpp's LaunchOptions::launcher says how auto
// decides).
enum class LauncherKind { Auto, Local, Ssh, Slurm, SlurmTask };
template <>
struct ChoiceTable<LauncherKind> {
  static constexpr const char* what = "launcher";
  static constexpr ChoiceRow<LauncherKind> rows[] = {{LauncherKind::Auto, "auto"},
                                                     {LauncherKind::Local, "local"},
                                                     {LauncherKind::Ssh, "ssh"},
                                                     {LauncherKind::Slurm, "slurm"},
                                                     {LauncherKind::SlurmTask, "slurm-task"}};
};

// launch.device: what ranks compute on (auto: GPUs when present).
enum class DeviceKind { Auto, Cpu, Gpu };
template <>
struct ChoiceTable<DeviceKind> {
  static constexpr const char* what = "device kind";
  static constexpr ChoiceRow<DeviceKind> rows[] = {
      {DeviceKind::Auto, "auto"}, {DeviceKind::Cpu, "cpu"}, {DeviceKind::Gpu, "gpu"}};
};

// launch.rdzv_backend. c10d is torchrun's name for the dynamic rendezvous, which mtrain's store
// serves: the launcher takes it as mtrain (launch_decision.cpp). etcd: the same rendezvous kept
// in an etcd cluster the user runs (lib/rendezvous/etcd_rendezvous.hpp).
enum class RdzvBackend { Static, Mtrain, C10d, Etcd };
template <>
struct ChoiceTable<RdzvBackend> {
  static constexpr const char* what = "rendezvous backend";
  static constexpr ChoiceRow<RdzvBackend> rows[] = {
      {RdzvBackend::Static, "static"}, {RdzvBackend::Mtrain, "mtrain"}, {RdzvBackend::C10d, "c10d"}, {RdzvBackend::Etcd, "etcd"}};
};

// launch.rdzv_etcd_api: how the etcd backend speaks to the cluster. grpc: etcd's native API
// (lib/rendezvous/etcd_grpc.hpp), what etcdctl speaks; gateway: its JSON gateway over HTTP/1.1
// (etcd_http.hpp), for a cluster reached through a proxy that passes only HTTP/1.1.
enum class EtcdApi { Grpc, Gateway };
template <>
struct ChoiceTable<EtcdApi> {
  static constexpr const char* what = "etcd API";
  static constexpr ChoiceRow<EtcdApi> rows[] = {{EtcdApi::Grpc, "grpc"}, {EtcdApi::Gateway, "gateway"}};
};

// launch.scale_up: how a node's ranks leave their round for an arriving node
// (lib/launch/scale_up.hpp says what each does).
enum class ScaleUp { checkpoint, now, off };
template <>
struct ChoiceTable<ScaleUp> {
  static constexpr const char* what = "scale-up mode";
  static constexpr ChoiceRow<ScaleUp> rows[] = {
      {ScaleUp::checkpoint, "checkpoint"}, {ScaleUp::now, "now"}, {ScaleUp::off, "off"}};
};

// launch.pass_config: how the job's trainer settings reach a program given to `mtrain launch`.
enum class PassConfig { None, Deepspeed, Accelerate };
template <>
struct ChoiceTable<PassConfig> {
  static constexpr const char* what = "pass_config";
  static constexpr ChoiceRow<PassConfig> rows[] = {
      {PassConfig::None, "none"}, {PassConfig::Deepspeed, "deepspeed"}, {PassConfig::Accelerate, "accelerate"}};
};

// launch.format: how --dry-run prints the plan, text or json as every command prints.
using PlanFormat = OutputFormat;

// slurm.pattern: how ranks start inside the allocation. agent-per-node and task-per-gpu are the
// long names of agent and task (printing gives the short one).
enum class SlurmPattern {
  AgentPerNode,  // srun --ntasks-per-node=1 mtrain launch …: one node agent spawns the node's ranks
  TaskPerGpu,    // srun --ntasks-per-node=G: Slurm starts every rank, mtrain translates the env
};
template <>
struct ChoiceTable<SlurmPattern> {
  static constexpr const char* what = "Slurm pattern";
  static constexpr ChoiceRow<SlurmPattern> rows[] = {{SlurmPattern::AgentPerNode, "agent"},
                                                     {SlurmPattern::TaskPerGpu, "task"},
                                                     {SlurmPattern::AgentPerNode, "agent-per-node"},
                                                     {SlurmPattern::TaskPerGpu, "task-per-gpu"}};
};

}  // namespace mtrain::config
