// The launch benchmark's driver (lib/bench/launch_bench.cpp) with a fake runner: what it runs, and
// how results and failures become rows.
#include <catch2/catch.hpp>

#include "lib/bench/launch_bench.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::bench;
using mtrain::envreport::CommandResult;
using Catch::Matchers::Contains;

TEST_CASE("bench launch times each world size with both rank programs and the floor", "[bench][launch]") {
  LaunchBenchOptions o;
  o.nproc = {1, 4};
  o.mtrain_path = "/x/mtrain";
  o.worker_path = "/x/mtrain-worker";
  o.compare = {"/old/mtrain"};
  auto cmds = launch_commands(o);
  REQUIRE(cmds.size() == 10);
  CHECK(cmds[0].nproc == 1);
  CHECK(cmds[0].argv == std::vector<std::string>{"/x/mtrain", "launch", "--nproc-per-node", "1", "--master-port", "auto",
                                                 "--launcher", "local", "--", "/x/mtrain", "__barrier"});
  CHECK(cmds[1].argv.back() == "0");  // mtrain-worker bench-comm --ops barrier … --warmup 0
  CHECK(cmds[1].argv[9] == "/x/mtrain-worker");
  // The launcher's first answer, of this mtrain and of the one compared.
  CHECK(cmds[4].argv == std::vector<std::string>{"/x/mtrain", "--help"});
  CHECK(cmds[5].argv == std::vector<std::string>{"/x/mtrain", "--version"});
  CHECK(cmds[6].argv == std::vector<std::string>{"/old/mtrain", "--help"});
  CHECK(cmds[7].label == "first answer: /old/mtrain --version");
  // What starting any program costs here, beside the first answers.
  CHECK(cmds[8].argv == std::vector<std::string>{"/bin/true"});
  CHECK(cmds[9].nproc == 0);
  CHECK(cmds[9].argv == std::vector<std::string>{"/usr/bin/python3", "-c", "import torch.distributed.run"});

  int calls = 0;
  time_commands(cmds, 3, 1000, [&](const std::vector<std::string>&, int) {
    ++calls;
    return CommandResult{true, 0, "", ""};
  });
  CHECK(calls == 30);
  for (const auto& c : cmds) CHECK(c.seconds.size() == 3);
  // Fixed samples: the report's medians and the ratio to the floor.
  for (auto& c : cmds) c.seconds = c.argv[0] == "/usr/bin/python3" ? std::vector<double>{1.0, 1.2, 0.8} : std::vector<double>{0.05, 0.04, 0.06};
  cmds[4].seconds = {0.002, 0.003, 0.0025};
  cmds[8].seconds = {0.001, 0.0012, 0.0011};
  auto r = launch_report(cmds, 3);
  REQUIRE(r.doc.at("rows").size() == 10);
  CHECK(r.doc.at("exec_floor_s").get<double>() == Approx(0.0011));
  CHECK_THAT(render_text(r), Contains("starting and reaping /bin/true takes 1.1 ms"));
  CHECK(r.doc.at("rows").at(4).at("command").get<std::string>() == "/x/mtrain --help");
  CHECK(r.doc.at("rows").at(4).at("median_s").get<double>() == Approx(0.0025));
  CHECK(r.doc.at("rows").at(0).at("median_s").get<double>() == Approx(0.05));
  CHECK(r.doc.at("rows").at(0).at("vs_floor").get<double>() == Approx(0.05));
  CHECK(r.doc.at("floor_s").get<double>() == Approx(1.0));
  CHECK_THAT(render_text(r), Contains("torchrun floor"));
  CHECK(r.plot.series.size() == 3);  // two rank programs + the floor line
}

TEST_CASE("a failing launch command stops the benchmark with its output", "[bench][launch]") {
  LaunchBenchOptions o;
  o.nproc = {2};
  o.mtrain_path = "/x/mtrain";
  o.python = "";
  auto cmds = launch_commands(o);
  REQUIRE(cmds.size() == 4);  // the launch, mtrain --help and --version, the exec floor
  CHECK_THROWS_WITH(time_commands(cmds, 1, 1000,
                                  [](const std::vector<std::string>&, int) {
                                    return CommandResult{true, 1, "error: rank 1 could not reach rank 0", ""};
                                  }),
                    Contains("could not reach rank 0"));
}
