// mtrain-worker --job FILE [--set key=value …]: one rank of the bundled trainer.
// Other modes, chosen by the first argument: `bench-comm …` (the rank side of
// `mtrain bench comm`) and `build-info` (what LibTorch/CUDA/NCCL it was built with, as JSON).
#include <cstring>
#include <iostream>

#include "mtrain/core/error.hpp"
#include "mtrain/trainer/bench/comm_bench.hpp"
#include "mtrain/trainer/loop/worker.hpp"

namespace {
const char* kUsage =
    "usage: mtrain-worker [--job FILE] [--set key=value]...\n"
    "One rank of mtrain's bundled trainer. `mtrain launch` starts it with the job it resolved and\n"
    "the rank environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); without them it trains\n"
    "alone (world 1).\n";
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "build-info") {
    std::cout << mtrain::trainer::build_info().dump() << std::endl;
    return 0;
  }
  mtrain::trainer::WorkerOptions o;
  for (int i = 1; i < argc && mode != "bench-comm"; ++i) {
    const std::string a = argv[i];
    if ((a == "--job" || a == "--set") && i + 1 < argc) {
      (a == "--job" ? o.job_path : o.sets.emplace_back()) = argv[++i];
    } else if (a.rfind("--job=", 0) == 0) {
      o.job_path = a.substr(6);
    } else if (a.rfind("--set=", 0) == 0) {
      o.sets.push_back(a.substr(6));
    } else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else {
      std::cerr << "error: mtrain-worker: unexpected argument '" << a << "'.\n" << kUsage;
      return mtrain::kExitUsage;
    }
  }
  o.env = mtrain::trainer::worker_env_from_process();
  const std::string tag = "[rank " + (o.env.count("RANK") ? o.env["RANK"] : std::string("0")) + "] ";
  try {
    if (mode == "bench-comm") {
      auto args = mtrain::trainer::parse_comm_bench_args(std::vector<std::string>(argv + 2, argv + argc));
      mtrain::trainer::run_comm_bench(args, o.env);
      return 0;
    }
    return mtrain::trainer::run_worker(o, std::cout);
  } catch (const mtrain::Error& e) {
    std::cerr << tag << e.paragraph() << std::endl;
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << tag << "error: " << e.what() << std::endl;
    return mtrain::kExitFailure;
  }
}
