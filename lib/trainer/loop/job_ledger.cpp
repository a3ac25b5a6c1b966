#include "lib/trainer/loop/job_ledger.hpp"

#include "lib/core/error.hpp"

namespace mtrain::trainer {

int job_ledger_world(const TrainJob& job, int world) {
  return config::model_state_group_size(job.strategy, job.strat.fsdp.sharding_strategy, world,
                                        job.strat.local_world_size);
}

ModelStateBytes job_ledger_formula(const TrainJob& job, const std::string& strategy_name, int64_t psi, int world) {
  try {
    return expected_model_state_bytes(job.strategy, job.strat.fsdp.sharding_strategy, job.precision(), psi,
                                      job_ledger_world(job, world));
  } catch (const Error&) {
    ModelStateBytes unknown;
    unknown.formula = "unknown for strategy " + strategy_name;
    return unknown;
  }
}

LedgerReport job_ledger_report(const TrainJob& job, int64_t psi, int world, const MemoryLedger& fullest,
                               int64_t buffers, bool on_cpu) {
  LedgerReport rep;
  rep.strategy = job.strategy;
  rep.sharding_strategy = job.strat.fsdp.sharding_strategy;
  rep.precision = job.precision();
  rep.psi = psi;
  rep.world = job_ledger_world(job, world);
  rep.world_size = world;
  rep.params = fullest.params;
  rep.grads = fullest.grads;
  rep.optimizer = fullest.optimizer;
  rep.gathered = fullest.gathered;
  rep.buffers = buffers;
  rep.persistence_threshold = job.strat.zero.stage3_param_persistence_threshold;
  rep.offload = offload_text(rep.strategy, job.strat.zero.offload_optimizer_device,
                             job.strat.zero.offload_param_device, job.strat.fsdp.cpu_offload);
  rep.on_cpu = on_cpu;
  return rep;
}

}  // namespace mtrain::trainer
