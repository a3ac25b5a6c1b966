// mtrain-worker --job FILE [--set key=value …]: one rank of the bundled trainer.
// mtrain-worker checkpoint …: the offline checkpoint tools `mtrain checkpoint` execs.
// mtrain-worker model-check FILE: the TorchScript trust and compatibility check `mtrain launch` asks for.
// mtrain-worker bench-comm …: the rank side of `mtrain bench comm`; build-info: what
// LibTorch/CUDA/NCCL it was built with, as JSON (read by `mtrain env`).
#include <sys/stat.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "lib/core/error.hpp"
#include "lib/trainer/bench/build_info.hpp"
#include "lib/trainer/bench/comm_bench.hpp"
#include "lib/trainer/checkpoint/checkpoint_cli.hpp"
#include "lib/trainer/estimate/probe.hpp"
#include "lib/trainer/loop/failure_record.hpp"
#include "lib/trainer/loop/worker.hpp"
#include "lib/trainer/model/model_check_command.hpp"

namespace {
const char* kUsage =
    "usage: mtrain-worker [--job FILE] [--set key=value]...\n"
    "       mtrain-worker checkpoint consolidate|inspect|verify DIR ...\n"
    "       mtrain-worker bench-comm --ops OPS --sizes BYTES,... [--iters N] [--warmup W] [--out FILE]\n"
    "       mtrain-worker build-info [--facts FILE [--set key=value]...]\n"
    "       mtrain-worker estimate-probe --job FILE [--batches 1,2] [--warmup 0|1]\n"
    "       mtrain-worker model-check FILE | --compiled DIR\n"
    "One rank of mtrain's bundled trainer. `mtrain launch` starts it with the job it resolved and\n"
    "the rank environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); without them it trains\n"
    "alone (world 1).\n";
}

// Runs a mode's body; an mtrain::Error becomes its paragraph on stderr and its exit code.
template <class F>
int guarded(const std::string& tag, F&& body) {
  try {
    return body();
  } catch (const mtrain::Error& e) {
    std::cerr << tag << e.paragraph() << std::endl;
    return mtrain::exit_code_of(e);
  } catch (const std::exception& e) {
    std::cerr << tag << mtrain::trainer::failure_paragraph(e) << std::endl;  // no C++ backtrace
    return mtrain::exit_code_of(e);
  }
}

int main(int argc, char** argv) {
  // Nothing the worker writes (metrics, checkpoints, model.pt, consolidated weights) is ever
  // world-writable, whatever umask the job started under (000 on some shared clusters): anyone
  // could otherwise swap the weights a resume loads. Group bits follow the user's umask, since
  // teams share work dirs by group.
  ::umask(::umask(0) | S_IWOTH);
  if (argc > 1 && std::strcmp(argv[1], "build-info") == 0) {  // also at build time (CMakeLists.txt)
    const std::vector<std::string> args(argv + 2, argv + argc);
    return guarded("mtrain-worker build-info: ", [&] { return mtrain::trainer::run_build_info_command(args, kUsage, std::cout); });
  }
  if (argc > 1 && std::strcmp(argv[1], "bench-comm") == 0) {
    const std::vector<std::string> args(argv + 2, argv + argc);
    const auto env = mtrain::trainer::worker_env_from_process();
    const std::string tag = "[rank " + (env.count("RANK") ? env.at("RANK") : std::string("0")) + "] ";
    return guarded(tag, [&] {
      mtrain::trainer::run_comm_bench(mtrain::trainer::parse_comm_bench_args(args), env);
      return 0;
    });
  }
  if (argc > 1 && std::strcmp(argv[1], "estimate-probe") == 0) {  // for `mtrain estimate` (probe.hpp)
    const std::vector<std::string> args(argv + 2, argv + argc);
    return guarded("", [&] {
      std::cout << mtrain::trainer::run_estimate_probe(mtrain::trainer::parse_estimate_probe_args(args)).dump() << std::endl;
      return 0;
    });
  }
  if (argc > 1 && std::strcmp(argv[1], "model-check") == 0) {  // for `mtrain launch` (model_check_command.hpp)
    const std::vector<std::string> args(argv + 2, argv + argc);
    return guarded("", [&] { return mtrain::trainer::run_model_check_command(args, std::cout); });
  }
  if (argc > 1 && std::strcmp(argv[1], "checkpoint") == 0) {
    const std::vector<std::string> args(argv + 2, argv + argc);
    return guarded("", [&] { return mtrain::trainer::run_checkpoint_command(args, std::cout, std::cerr); });
  }
  mtrain::trainer::WorkerOptions o;
  for (int i = 1; i < argc; ++i) {
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
  return guarded(tag, [&] {
    try {
      return mtrain::trainer::run_worker(o, std::cout);
    } catch (const std::exception& e) {
      mtrain::trainer::record_failure(o.env, e);  // a failure before training (the first one wins)
      throw;
    }
  });
}
