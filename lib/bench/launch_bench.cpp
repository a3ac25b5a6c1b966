#include "lib/bench/launch_bench.hpp"

#include <chrono>
#include <map>

#include <fmt/format.h>

#include "lib/bench/measures.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/envreport/run_command.hpp"

namespace mtrain::bench {

namespace {
const char* kFloor = "torchrun floor: python3 -c 'import torch.distributed.run'";
const char* kNative = "mtrain launch + mtrain __barrier (TCP)";
const char* kWorker = "mtrain launch + mtrain-worker (LibTorch, c10d gloo barrier)";
// What starting any program costs on this machine (fork, exec, the loader, exit, the pipes):
// the part of a first answer mtrain cannot remove, measured beside it.
const char* kExecFloor = "exec floor: /bin/true";

void add_first_answers(std::vector<TimedCommand>& cmds, const std::string& mtrain, const std::string& name) {
  for (const char* flag : {"--help", "--version"})
    cmds.push_back({fmt::format("first answer: {} {}", name, flag), 0, {mtrain, flag}, {}});
}
}  // namespace

std::vector<TimedCommand> launch_commands(const LaunchBenchOptions& o) {
  std::vector<TimedCommand> cmds;
  for (int n : o.nproc) {
    const std::vector<std::string> head = {o.mtrain_path, "launch", "--nproc-per-node", std::to_string(n),
                                           "--master-port", "auto", "--launcher", "local", "--"};
    auto native = head;
    native.insert(native.end(), {o.mtrain_path, "__barrier"});
    cmds.push_back({kNative, n, native, {}});
    if (!o.worker_path.empty()) {
      auto worker = head;
      worker.insert(worker.end(), {o.worker_path, "bench-comm", "--ops", "barrier", "--iters", "1", "--warmup", "0"});
      cmds.push_back({kWorker, n, worker, {}});
    }
  }
  add_first_answers(cmds, o.mtrain_path, "mtrain");
  for (const auto& other : o.compare) add_first_answers(cmds, other, other);
  cmds.push_back({kExecFloor, 0, {"/bin/true"}, {}});
  if (!o.python.empty()) cmds.push_back({kFloor, 0, {o.python, "-c", "import torch.distributed.run"}, {}});
  return cmds;
}

void time_commands(std::vector<TimedCommand>& cmds, int reps, int timeout_ms, const Runner& run) {
  for (int rep = 0; rep < reps; ++rep) {
    for (auto& c : cmds) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = run(c.argv, timeout_ms);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!r.started || r.rc != 0) {
        std::string out = str::trim(r.out + r.err);
        if (out.size() > 2000) out = "…" + out.substr(out.size() - 2000);
        throw Error(fmt::format("`{}` failed (exit {}){}", str::shell_join(c.argv), r.rc, out.empty() ? "" : ":\n" + out),
                    "Run it by hand to see why; `mtrain env` lists what is missing.", kExitFailure);
      }
      c.seconds.push_back(s);
    }
  }
}

BenchReport launch_report(const std::vector<TimedCommand>& cmds, int reps) {
  BenchReport r;
  r.table.headers = {"program", "nproc", "median(ms)", "min(ms)", "max(ms)", "vs floor"};
  r.table.left = {true};
  double floor = 0, exec_floor = 0;
  for (const auto& c : cmds) {
    if (c.label == kFloor && !c.seconds.empty()) floor = summarize(c.seconds).median;
    if (c.label == kExecFloor && !c.seconds.empty()) exec_floor = summarize(c.seconds).median;
  }
  json rows = json::array();
  std::map<std::string, Series> series;
  for (const auto& c : cmds) {
    if (c.seconds.empty()) continue;
    Summary s = summarize(c.seconds);
    const std::string ratio = floor > 0 ? fmt::format("{:.2f}x", s.median / floor) : "-";
    r.table.rows.push_back({c.label, c.nproc ? std::to_string(c.nproc) : "-", fmt::format("{:.1f}", s.median * 1e3),
                            fmt::format("{:.1f}", s.min * 1e3), fmt::format("{:.1f}", s.max * 1e3), ratio});
    rows.push_back({{"program", c.label}, {"nproc", c.nproc ? json(c.nproc) : json(nullptr)}, {"command", str::shell_join(c.argv)},
                    {"median_s", s.median}, {"min_s", s.min}, {"max_s", s.max}, {"mean_s", s.mean}, {"samples", c.seconds},
                    {"vs_floor", floor > 0 ? json(s.median / floor) : json(nullptr)}});
    if (c.nproc) {
      auto& se = series[c.label];
      se.name = c.label;
      se.points.emplace_back(c.nproc, s.median * 1e3);
    }
  }
  r.notes.push_back(fmt::format("# {} runs of each command, interleaved; time = from starting the command until it exited "
                                "after every rank passed its first barrier (a first answer: after it printed and exited)",
                                reps));
  if (exec_floor > 0)
    r.notes.push_back(fmt::format("# exec floor: starting and reaping /bin/true takes {:.1f} ms here; a first answer's own "
                                  "time is its median minus that",
                                  exec_floor * 1e3));
  if (floor > 0)
    r.notes.push_back(fmt::format("# torchrun floor: importing torch.distributed.run alone takes {:.1f} ms, before torchrun "
                                  "has started any rank",
                                  floor * 1e3));
  r.doc = {{"bench", "launch"}, {"reps", reps}, {"rows", rows}, {"floor_s", floor > 0 ? json(floor) : json(nullptr)},
           {"exec_floor_s", exec_floor > 0 ? json(exec_floor) : json(nullptr)}};
  r.plot.title = "mtrain bench launch: spawn N ranks and pass a first barrier";
  r.plot.xlabel = "ranks (nproc)";
  r.plot.ylabel = "wall time (ms)";
  r.plot.logx = true;
  std::vector<int> xs;
  for (auto& [label, s] : series) {
    r.plot.series.push_back(s);
    for (auto& p : s.points) xs.push_back(static_cast<int>(p.first));
  }
  if (floor > 0 && !xs.empty()) {
    Series f{"torchrun floor (import torch.distributed.run)", {}};
    f.points = {{*std::min_element(xs.begin(), xs.end()), floor * 1e3}, {*std::max_element(xs.begin(), xs.end()), floor * 1e3}};
    r.plot.series.push_back(f);
  }
  return r;
}

BenchReport run_launch_bench(const LaunchBenchOptions& o) {
  if (o.reps < 1) throw Error(fmt::format("--reps {} must be at least 1", o.reps));
  Runner run = [](const std::vector<std::string>& argv, int timeout_ms) {
    envreport::RunOptions ro;
    ro.timeout_ms = timeout_ms;
    ro.merge_stderr = true;
    return envreport::run_command(argv, ro);
  };
  LaunchBenchOptions opt = o;
  std::string no_floor;
  if (!opt.python.empty()) {
    auto probe = run({opt.python, "-c", "import torch.distributed.run"}, opt.timeout_ms);  // also warms the page cache
    if (!probe.started || probe.rc != 0) {
      no_floor = fmt::format("# no torchrun floor: `{} -c 'import torch.distributed.run'` failed (install python3-torch)",
                             opt.python);
      opt.python.clear();
    }
  }
  auto cmds = launch_commands(opt);
  time_commands(cmds, opt.reps, opt.timeout_ms, run);
  BenchReport r = launch_report(cmds, opt.reps);
  if (!no_floor.empty()) r.notes.push_back(no_floor);
  return r;
}

}  // namespace mtrain::bench
