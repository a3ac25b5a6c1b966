#pragma once
// The memory ledger (ledger.hpp) of one run, filled in from its TrainJob: N of the formula, the
// bytes the formula predicts, and the report rank 0 prints at start from the fullest rank's
// measured figures. Pure: the loop gathers the figures over ranks and prints the table.
#include <cstdint>
#include <string>

#include "lib/trainer/loop/ledger.hpp"
#include "lib/trainer/loop/train_job.hpp"
#include "lib/trainer/strategy/strategy.hpp"

namespace mtrain::trainer {

// N of the formula for `job` on `world` ranks, from the options the strategy itself was made
// with (fsdp HYBRID_SHARD: the shard group).
int job_ledger_world(const TrainJob& job, int world);

// The formula's bytes for `job` with Ψ = psi; a strategy the formula does not cover gets zero
// bytes and the formula text "unknown for strategy <strategy_name>".
ModelStateBytes job_ledger_formula(const TrainJob& job, const std::string& strategy_name, int64_t psi, int world);

// The table's report: `fullest` holds the fullest rank's params, grads, optimizer and gathered
// bytes; `buffers` the model's buffers; `on_cpu` whether ranks compute on the CPU.
LedgerReport job_ledger_report(const TrainJob& job, int64_t psi, int world, const MemoryLedger& fullest,
                               int64_t buffers, bool on_cpu);

}  // namespace mtrain::trainer
