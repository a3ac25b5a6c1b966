// The training benchmark's driver (lib/bench/train_bench.cpp) with a fake runner: one mtrain
// launch per cell, rows read from summary.json, a failing cell a row with the worker's error.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "lib/bench/train_bench.hpp"
#include "lib/core/error.hpp"
#include "temp_dir.hpp"

using namespace mtrain::bench;
using mtrain::envreport::CommandResult;
using mtrain::testing::TempDir;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

TEST_CASE("bench train runs one mtrain launch per cell", "[bench][train]") {
  TrainBenchOptions o;
  o.strategies = {"ddp", "zero3"};
  o.nproc = {1, 2};
  o.model = "mlp";
  o.steps = 7;
  o.warmup = 2;
  o.rounds = 2;
  o.sets = {"train.batch_size=4"};
  o.mtrain_path = "/x/mtrain";
  auto cells = train_cells(o, "/w");
  REQUIRE(cells.size() == 8);
  // Rounds are interleaved: every cell's first round comes before any second round.
  for (size_t i = 0; i < 8; ++i) CHECK(cells[i].round == (i < 4 ? 1 : 2));
  CHECK(cells[3].strategy == "zero3");
  CHECK(cells[3].nproc == 2);
  CHECK(cells[3].work_dir == "/w/zero3-n2-r1");
  CHECK(cells[7].work_dir == "/w/zero3-n2-r2");
  CHECK(cells[3].argv == std::vector<std::string>{"/x/mtrain", "launch", "--nproc-per-node", "2", "--master-port", "auto",
                                                  "--launcher", "local", "--strategy", "zero3", "--model", "mlp", "--set",
                                                  "train.max_steps=9", "--set", "train.timing_warmup_steps=2", "--set",
                                                  "train.work_dir=/w/zero3-n2-r1", "--set", "train.batch_size=4"});
}

TEST_CASE("bench train reads summary.json, a failing cell is a row with the worker's error", "[bench][train]") {
  TempDir d;
  TrainBenchOptions o;
  o.strategies = {"ddp", "zero1"};
  o.nproc = {2};
  o.steps = 5;
  o.rounds = 3;
  o.mtrain_path = "/x/mtrain";
  auto cells = train_cells(o, d.str());
  int zero1_runs = 0, round = 0;
  // Round k's ddp run: steps between 0.01k and 0.03k s, median 0.02k (k = 1, 2, 3).
  auto r = run_train_cells(cells, o, [&](const std::vector<std::string>& argv, const std::string& log, int) {
    const bool ddp = argv[9] == "ddp";
    std::ofstream(log) << (ddp ? "Iter(train) [5/5] loss: 1.0\n"
                               : "[host:0] [rank 0] error: strategy 'zero1' is not part of this trainer build yet. use ddp\n");
    if (ddp) {
      ++round;
      std::ofstream(d.str() + "/ddp-n2-r" + std::to_string(round) + "/summary.json")
          << R"({"strategy":"ddp","world_size":2,"num_params":1000,"steps":7,
        "final_loss":0.5,"step_time_median_s":)" << 0.02 * round << R"(,"step_time_s":{"min":)" << 0.01 * round
          << R"(,"median":)" << 0.02 * round << R"(,"max":)" << 0.03 * round << R"(},
        "peak_memory_bytes":1048576,"wire_bytes_per_step":4000,
        "model_state_bytes_per_rank":{"params":4000,"grads":4000,"optimizer":8000},
        "throughput":{"samples_per_s":800.0}})";
    } else {
      ++zero1_runs;
    }
    return CommandResult{true, ddp ? 0 : 2, "", ""};
  });
  CHECK(round == 3);
  CHECK(zero1_runs == 1);  // a failed cell is not run again in later rounds
  REQUIRE(r.doc.at("rows").size() == 2);
  const auto& ok = r.doc.at("rows").at(0);
  CHECK(ok.at("status") == "ok");
  CHECK(ok.at("rounds") == 3);
  CHECK(ok.at("step_time_median_s").get<double>() == Approx(0.04));
  CHECK(ok.at("step_time_s").at("min").get<double>() == Approx(0.01));
  CHECK(ok.at("step_time_s").at("max").get<double>() == Approx(0.09));
  CHECK(ok.at("model_state_bytes_total_per_rank") == 16000);
  CHECK(ok.at("throughput").at("samples_per_s") == 800.0);
  const auto& bad = r.doc.at("rows").at(1);
  CHECK(bad.at("status") == "failed");
  CHECK_THAT(bad.at("error").get<std::string>(), Contains("strategy 'zero1' is not part of this trainer build"));
  CHECK(r.doc.at("failed") == 1);
  const std::string text = render_text(r);
  CHECK_THAT(text, Contains("failed [1]"));
  CHECK_THAT(text, Contains("[1] zero1 on 2 rank(s): exit 2: [host:0] [rank 0] error: strategy 'zero1'"));
  CHECK_THAT(text, Contains("800.0"));
  REQUIRE(r.plot.series.size() == 1);
  CHECK(r.plot.series[0].points == std::vector<std::pair<double, double>>{{2, 800.0}});
}

TEST_CASE("failure_reason picks the last error line", "[bench][train]") {
  CHECK(failure_reason("a\nerror: first\nb\nerror: second\nc\n") == "error: second");
  CHECK(failure_reason("only output\nlast line\n") == "last line");
  CHECK(failure_reason("") == "no output");
}
