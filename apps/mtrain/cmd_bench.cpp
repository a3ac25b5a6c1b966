// `mtrain bench comm|launch|train|rendezvous`: flags → options → one lib/bench driver → emit (table or
// JSON, --output, --plot). Also the hidden `mtrain __barrier`, the rank program of bench launch.
#include <filesystem>

#include "commands.hpp"
#include "lib/bench/comm.hpp"
#include "lib/bench/launch_bench.hpp"
#include "lib/bench/measures.hpp"
#include "lib/bench/rendezvous_bench.hpp"
#include "lib/bench/report.hpp"
#include "lib/bench/tcp_barrier.hpp"
#include "lib/bench/train_bench.hpp"
#include "lib/config/cli_flags.hpp"
#include "lib/config/registry.hpp"
#include "lib/core/environment.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/launch/launch.hpp"
#include "lib/core/own_executable.hpp"

namespace mtrain::app {

namespace {

void add_emit_flags(CLI::App* sub, bench::EmitOptions& e) {
  const char* g = "Output";
  config::add_choice_option(*sub, "--format", e.format, "Output format")->default_str("text")->group(g);
  sub->add_option("--output", e.output, "Write the result to FILE instead of stdout")->group(g);
  sub->add_option("--plot", e.plot, "Also draw FILE.png or FILE.svg (gnuplot or matplotlib)")->group(g);
  config::add_choice_option(*sub, "--plotter", e.plotter, "Plotting tool")->default_str("auto")->group(g);
}

// Fails before a long benchmark, not after it, when the plot cannot be drawn.
void check_plot(const bench::EmitOptions& e) {
  if (e.plot.empty()) return;
  bench::gnuplot_script({}, e.plot);  // checks the suffix
  envreport::PosixSystemProbe probe;
  bench::find_plotter(probe, e.plotter);
}

// One per `bench` subcommand: its flags and the call of its lib/bench driver.
void add_bench_comm(CLI::App* bench, Exit& exit) {
  struct CommFlags {
    bench::CommBenchOptions o;
    std::string ops = "all_reduce,all_gather,reduce_scatter,broadcast";
    std::string min_bytes = "1K", max_bytes = "1G";
    bench::EmitOptions e;
  };
  auto cf = std::make_shared<CommFlags>();
  auto* comm = bench->add_subcommand("comm", "Collectives x sizes over c10d (Gloo on CPU, NCCL on GPU), nccl-tests style");
  comm->add_option("--nproc,--nproc-per-node", cf->o.nproc, "Ranks on this machine")->check(CLI::Range(1, 4096))->default_str("2");
  comm->add_option("--ops", cf->ops, "Collectives: all_reduce,all_gather,reduce_scatter,broadcast")->default_str(cf->ops);
  comm->add_option("--min-bytes", cf->min_bytes, "Smallest size (1K, 64M, 1G, or bytes)")->default_str("1K");
  comm->add_option("--max-bytes", cf->max_bytes, "Largest size; sizes double from --min-bytes")->default_str("1G");
  comm->add_option("--iters", cf->o.iters, "Timed calls per size")->check(CLI::Range(1, 1000000))->default_str("20");
  comm->add_option("--warmup", cf->o.warmup, "Untimed calls per size first")->check(CLI::Range(0, 1000000))->default_str("5");
  comm->add_option("--max-seconds", cf->o.max_seconds, "Per size: run fewer timed calls (at least 3) when --iters would take longer; 0: never")
      ->check(CLI::Range(0.0, 86400.0))
      ->default_str("0");
  comm->add_option("--gpus", cf->o.gpus, "GPU ids to use (CUDA builds), e.g. 0,1");
  add_emit_flags(comm, cf->e);
  comm->callback([cf, &exit] {
    auto& o = cf->o;
    o.ops = str::split(cf->ops, ',');
    o.min_bytes = bench::parse_size(cf->min_bytes, "--min-bytes");
    o.max_bytes = bench::parse_size(cf->max_bytes, "--max-bytes");
    bench::comm_worker_args(o, "");  // checks --ops and the sizes before anything starts
    check_plot(cf->e);
    o.worker_path = launch::own_worker();
    auto r = bench::run_comm(o);
    bench::emit(r, cf->e);
    exit.code = r.doc.at("wrong").get<int>() > 0 ? kExitFailure : 0;
  });
}

void add_bench_launch(CLI::App* bench, Exit& exit) {
  struct LaunchFlags {
    bench::LaunchBenchOptions o;
    std::string nproc = "1,2,4,8";
    bool no_worker = false;
    bench::EmitOptions e;
  };
  auto lf = std::make_shared<LaunchFlags>();
  auto* lb = bench->add_subcommand("launch", "Time to spawn N ranks and pass a first barrier, beside torchrun's start-up floor");
  lb->add_option("--nproc,--nproc-per-node", lf->nproc, "World sizes to time, e.g. 1,2,4,8")->default_str("1,2,4,8");
  lb->add_option("--reps", lf->o.reps, "Runs of each command (interleaved)")->check(CLI::Range(1, 100000))->default_str("10");
  lb->add_flag("--no-worker", lf->no_worker, "Skip the mtrain-worker (LibTorch + c10d barrier) rows");
  lb->add_option("--compare", lf->o.compare, "Also time the first answer (--help, --version) of this other mtrain binary")
      ->check(CLI::ExistingFile);
  lb->add_option("--python", lf->o.python, "Interpreter for the torchrun floor ('' to skip)")->default_str("/usr/bin/python3");
  add_emit_flags(lb, lf->e);
  lb->callback([lf, &exit] {
    auto& o = lf->o;
    o.nproc = bench::parse_int_list(lf->nproc, "--nproc", 1);
    check_plot(lf->e);
    o.mtrain_path = own_executable();
    if (!lf->no_worker) o.worker_path = launch::find_worker(o.mtrain_path);
    bench::emit(bench::run_launch_bench(o), lf->e);
    exit.code = 0;
  });
}

void add_bench_train(CLI::App* bench, Exit& exit) {
  struct TrainFlags {
    bench::TrainBenchOptions o;
    std::string strategies = "ddp,zero1,zero2,zero3,fsdp";
    std::string nproc = "1,2,4";
    bench::EmitOptions e;
  };
  auto tf = std::make_shared<TrainFlags>();
  auto* tb = bench->add_subcommand("train", "Strategies x world sizes of the bundled trainer: step time, throughput, memory, traffic");
  std::string strategy_choices;
  if (const auto* s = config::job_registry().find("strategy")) strategy_choices = str::join(s->choices, ",");
  tb->add_option("--strategies", tf->strategies, "Strategies to compare {" + strategy_choices + "}")->default_str(tf->strategies);
  tb->add_option("--nproc,--nproc-per-node", tf->nproc, "World sizes, e.g. 1,2,4")->default_str("1,2,4");
  std::string model_help = "Model for every cell";
  if (const auto* s = config::job_registry().find("model.name")) model_help += " {" + str::join(s->choices, ",") + "}";
  tb->add_option("--model", tf->o.model, model_help);
  tb->add_option("--steps", tf->o.steps, "Timed training steps per run")->check(CLI::Range(1, 100000000))->default_str("10");
  tb->add_option("--warmup", tf->o.warmup, "Untimed steps before them")->check(CLI::Range(0, 100000000))->default_str("2");
  tb->add_option("--rounds", tf->o.rounds, "Runs per cell, interleaved across the cells")->check(CLI::Range(1, 1000))->default_str("3");
  tb->add_option("--set", tf->o.sets, "Any trainer setting for every cell: --set key=value (repeatable)");
  tb->add_option("--config", tf->o.config, "Job file (YAML) for every cell");
  tb->add_option("--work-dir", tf->o.work_root, "Keep each cell's work dir and log under this folder (default: a temporary one)");
  add_emit_flags(tb, tf->e);
  tb->callback([tf, &exit] {
    auto& o = tf->o;
    o.strategies = str::split(tf->strategies, ',');
    o.nproc = bench::parse_int_list(tf->nproc, "--nproc", 1);
    check_plot(tf->e);
    o.mtrain_path = own_executable();
    auto r = bench::run_train_bench(o);
    bench::emit(r, tf->e);
    exit.code = r.doc.at("failed").get<int>() > 0 ? kExitFailure : 0;
  });
}

void add_bench_rendezvous(CLI::App* bench, Exit& exit) {
  struct RdzvFlags {
    bench::RendezvousBenchOptions o;
    std::string nodes = "64,512,4096";
    std::string backends = "mtrain";
    double heartbeat_s = 6;
    bench::EmitOptions e;
  };
  auto rf = std::make_shared<RdzvFlags>();
  auto* rb = bench->add_subcommand("rendezvous",
                                   "The node rendezvous (mtrain's store, etcd) with N simulated agents on loopback: "
                                   "time to form, heartbeat CPU, memory");
  rb->add_option("--nodes", rf->nodes, "Node counts to simulate, e.g. 64,512,4096")->default_str(rf->nodes);
  rb->add_option("--slots", rf->o.slots, "Ranks per simulated node")->check(CLI::Range(1, 4096))->default_str("8");
  rb->add_option("--heartbeat-seconds", rf->heartbeat_s, "How long to measure the store's heartbeat CPU")
      ->check(CLI::Range(1.0, 3600.0))
      ->default_str("6");
  rb->add_option("--backend", rf->backends,
                 "Rendezvous backends to measure, comma-separated: mtrain (the store), etcd (its gRPC API), "
                 "etcd-gateway (its JSON gateway)")
      ->default_str("mtrain");
  rb->add_option(
      "--etcd-endpoint", rf->o.etcd_endpoints,
      "etcd: a running cluster's members (host:2379,…); default: start a local 3-member cluster (etcd on PATH)");
  add_emit_flags(rb, rf->e);
  rb->callback([rf, &exit] {
    auto& o = rf->o;
    o.backends = str::split(rf->backends, ',');
    o.nodes = bench::parse_int_list(rf->nodes, "--nodes", 1);
    o.heartbeat_span = rendezvous::Duration(static_cast<long long>(rf->heartbeat_s * 1000));
    check_plot(rf->e);
    bench::emit(bench::run_rendezvous_bench(o), rf->e);
    exit.code = 0;
  });
}

}  // namespace

void build_bench(CLI::App* bench, Exit& exit) {
  bench->require_subcommand(1);
  add_bench_comm(bench, exit);
  add_bench_launch(bench, exit);
  add_bench_train(bench, exit);
  add_bench_rendezvous(bench, exit);
}

// The rank program of `bench launch` (hidden).
void build_barrier(CLI::App* barrier, Exit& exit) {
  barrier->callback([&exit] { exit.code = bench::run_tcp_barrier(process_environment(), 60000); });
}

}  // namespace mtrain::app
