// The loop end to end in-process (2 ranks as threads): checkpoints, resume, outputs.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "lib/config/registry.hpp"
#include "lib/core/error.hpp"
#include "lib/trainer/checkpoint/checkpointer.hpp"
#include "lib/trainer/checkpoint/shard_io.hpp"
#include "lib/trainer/loop/trainer.hpp"
#include "ranks.hpp"
#include "temp_dir.hpp"

using namespace mtrain::trainer;
namespace fs = std::filesystem;
using nlohmann::json;
using mtrain::testing::fresh_dir;

namespace {

json small_job(const fs::path& work_dir) {
  json j = mtrain::config::job_registry().defaults();
  using mtrain::config::set;
  set(j, "model.name", "mlp");
  set(j, "model.hidden", 32);
  set(j, "model.depth", 2);
  set(j, "model.input_dim", 8);
  set(j, "data.num_samples", 256);
  set(j, "train.batch_size", 8);
  set(j, "train.max_steps", 12);
  set(j, "train.log_interval", 4);
  set(j, "train.val_interval", 6);
  set(j, "sched.warmup_steps", 2);
  set(j, "checkpoint.interval", 5);
  set(j, "train.work_dir", work_dir.string());
  return j;
}

TrainerParts parts_for(const json& j, int64_t interrupt_after = -1) {
  const TrainJob tj = train_job_from_json(j);
  const ModelSpec& ms = tj.model;
  const DataSpec& ds = tj.data;
  TrainerParts p;
  p.model = make_model(ms, 5);
  p.train = make_dataset(ds, ms, Split::Train, 5);
  p.val = make_dataset(ds, ms, Split::Val, 5);
  p.interrupt_after = interrupt_after;
  return p;
}

// Runs the job on `world` thread ranks; returns rank 0's result and console text.
TrainResult run_job(const json& j, int world, int64_t interrupt_after, std::string* console = nullptr) {
  TrainResult r0;
  std::ostringstream out0;
  testing::run_ranks(world, [&](Communicator& comm) {
    std::ostringstream sink;
    auto parts = parts_for(j, interrupt_after);
    auto r = train(train_job_from_json(j), comm, parts, comm.rank() == 0 ? out0 : sink);
    if (comm.rank() == 0) r0 = r;
  });
  if (console) *console = out0.str();
  return r0;
}

std::map<std::string, at::Tensor> load_model(const fs::path& p) {
  std::map<std::string, at::Tensor> m;
  for (auto& [k, v] : read_tensor_dict(p.string())) m[k] = v;
  return m;
}

}  // namespace

TEST_CASE("an interrupted run resumed from its checkpoint ends bit-identical", "[trainer][loop]") {
  at::set_num_threads(1);
  const auto a = fresh_dir("uninterrupted"), b = fresh_dir("interrupted");
  std::string console;
  const auto ra = run_job(small_job(a), 2, -1, &console);
  CHECK(ra.steps == 12);

  // Killed after step 7: the step-5 checkpoint is the newest complete one.
  auto jb = small_job(b);
  run_job(jb, 2, 7);
  CHECK_FALSE(fs::exists(b / "model.pt"));
  REQUIRE(complete_checkpoints((b / "checkpoints").string()).back().first == 5);
  // A half-written later checkpoint (no COMPLETE) must be ignored by auto.
  fs::create_directories(b / "checkpoints" / "step_7");
  mtrain::config::set(jb, "checkpoint.resume", "auto");
  std::string resumed_console;
  const auto rb = run_job(jb, 2, -1, &resumed_console);
  CHECK_THAT(resumed_console, Catch::Contains("Resumed from") && Catch::Contains("step_5"));
  CHECK(rb.steps == 12);
  CHECK(rb.final_loss == ra.final_loss);

  auto ma = load_model(a / "model.pt"), mb = load_model(b / "model.pt");
  REQUIRE(ma.size() == mb.size());
  REQUIRE(!ma.empty());
  for (auto& [k, v] : ma) {
    INFO(k);
    CHECK(at::equal(v, mb.at(k)));
  }

  // Console lines in the MMEngine format, and the outputs.
  CHECK_THAT(console, Catch::Matches(
      R"((.|\n)*Iter\(train\) \[ 4/12\]  lr: \d\.\d{4}e[-+]\d\d  eta: \d+:\d\d:\d\d  time: \d+\.\d{4}  data_time: \d+\.\d{4}  memory: \d+  loss: \d+\.\d{4}(.|\n)*)"));
  CHECK_THAT(console, Catch::Contains("Iter(val) [ 6/12]  accuracy/top1: "));
  std::ifstream sj(a / "summary.json");
  const json s = json::parse(sj);
  for (const char* k : {"strategy", "world_size", "num_params", "steps", "final_loss",
                        "model_state_bytes_per_rank", "comm_per_step", "wire_bytes_per_step",
                        "peak_memory_bytes", "step_time_median_s", "throughput"}) {
    INFO(k);
    CHECK(s.contains(k));
  }
  const double psi = s["num_params"].get<double>();
  CHECK(s["model_state_bytes_per_rank"]["params"].get<double>() == 4 * psi);
  CHECK(s["model_state_bytes_per_rank"]["optimizer"].get<double>() == 8 * psi);
  CHECK(s["wire_bytes_per_step"].get<double>() == Approx(2 * psi * 0.5 * 4));
  std::ifstream mj(a / "metrics.jsonl");
  int train_lines = 0, val_lines = 0;
  for (std::string line; std::getline(mj, line);) {
    const json r = json::parse(line);
    (r["mode"] == "train" ? train_lines : val_lines)++;
  }
  CHECK(train_lines == 3);
  CHECK(val_lines == 2);
  // keep = 2: step_5 and step_10 were pruned down to the two newest (step_10 and the final 12).
  auto kept = complete_checkpoints((a / "checkpoints").string());
  REQUIRE(kept.size() == 2);
  CHECK(kept[0].first == 10);
  CHECK(kept[1].first == 12);
  const auto man = read_manifest(kept[1].second);
  CHECK(man.world_size == 2);
  CHECK(man.tensors.at("model/layers.0.weight").pieces.size() == 2);
}

TEST_CASE("a damaged or incomplete checkpoint is a clear error naming the file",
          "[trainer][loop]") {
  at::set_num_threads(1);
  const auto d = fresh_dir("damaged");
  auto j = small_job(d);
  mtrain::config::set(j, "train.max_steps", 5);
  run_job(j, 1, -1);
  const fs::path ck = d / "checkpoints" / "step_5";
  REQUIRE(fs::exists(ck / "COMPLETE"));
  {
    std::ofstream(ck / "shard_rank0.pt", std::ios::trunc) << "not a zip";
  }
  mtrain::config::set(j, "checkpoint.resume", ck.string());
  try {
    run_job(j, 1, -1);
    FAIL("resuming from a damaged shard succeeded");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.message(), Catch::Contains("shard_rank0.pt") && Catch::Contains("damaged"));
  }
  fs::remove(ck / "COMPLETE");
  CHECK_THROWS_WITH(run_job(j, 1, -1), Catch::Contains("COMPLETE"));
  fs::remove(ck / "manifest.json");
  mtrain::config::set(j, "checkpoint.resume", (d / "nope").string());
  CHECK_THROWS_WITH(run_job(j, 1, -1), Catch::Contains("nope"));
}

TEST_CASE("comm_per_step counts training steps only: validation, checkpoints and export apart",
          "[trainer][loop][comm]") {
  at::set_num_threads(1);
  // mlp 8 -> 32 -> 10: units of 288 and 330 elements, both divisible by 2 and 3, so no shard
  // padding and the per-step bytes are exactly the formula. Every unit is gathered on use
  // (persistence threshold 0), and validation runs twice: with ZeRO-3/FSDP each validation
  // pass and the model export gather every unit, which must not leak into the per-step figure.
  for (const char* strategy : {"zero3", "fsdp"}) {
    for (int world : {2, 3}) {
      DYNAMIC_SECTION(strategy << " world " << world) {
        const auto dir = fresh_dir(std::string("comm_") + strategy + std::to_string(world));
        auto j = small_job(dir);
        using mtrain::config::set;
        set(j, "strategy", strategy);
        set(j, "model.depth", 2);
        set(j, "zero.stage3_param_persistence_threshold", 0);
        set(j, "optim.grad_clip", 0.0);
        set(j, "train.max_steps", 6);
        set(j, "train.val_interval", 3);
        set(j, "checkpoint.interval", 2);
        run_job(j, world, -1);
        std::ifstream sj(dir / "summary.json");
        const json s = json::parse(sj);
        const double psi = s["num_params"].get<double>();
        REQUIRE(psi == 288 + 330);
        const double n = world;
        CHECK(s["wire_bytes_per_step"].get<double>() == Approx(3 * psi * (n - 1) / n * 4).epsilon(1e-12));
        const json& per = s["comm_per_step"];
        CHECK(per["all_gather"]["calls"].get<double>() == Approx(4));  // 2 units, forward + backward
        CHECK(per["all_gather"]["payload_bytes"].get<double>() == Approx(2 * psi * 4));
        const json& outside = s["comm_outside_steps"];
        // Every validation batch gathers both units (two passes of one or more batches).
        const auto val_gathers = outside["validation"]["all_gather"]["calls"].get<int64_t>();
        CHECK(val_gathers >= 4);
        CHECK(val_gathers % 4 == 0);
        CHECK(outside["validation"]["all_gather"]["payload_bytes"].get<double>() ==
              Approx(static_cast<double>(val_gathers / 2) * psi * 4));
        // The export gathers each unit once for both weights files (model.pt, model.safetensors).
        CHECK(outside["export"]["all_gather"]["calls"].get<int64_t>() == 2);
        // Step-time figures: the first step is warm-up (train.timing_warmup_steps 1).
        const json& st = s["step_time_s"];
        CHECK(st["warmup_steps"] == 1);
        CHECK(st["timed_steps"] == 5);
        CHECK(st["min"].get<double>() <= st["median"].get<double>());
        CHECK(st["median"].get<double>() <= st["max"].get<double>());
        CHECK(st["median"].get<double>() == s["step_time_median_s"].get<double>());
      }
    }
  }
}

TEST_CASE("BatchNorm buffers end identical on every rank (averaged over ranks)", "[trainer][loop]") {
  const fs::path dir = fresh_dir("buffers");
  json j = mtrain::config::job_registry().defaults();
  using mtrain::config::set;
  set(j, "model.name", "resnet18");
  set(j, "data.num_samples", 64);
  set(j, "train.batch_size", 2);
  set(j, "train.max_steps", 3);
  set(j, "strategy", "zero3");
  set(j, "train.work_dir", dir.string());
  std::vector<std::vector<at::Tensor>> seen(2);
  testing::run_ranks(2, [&](Communicator& comm) {
    std::ostringstream sink;
    auto parts = parts_for(j);
    parts.val = nullptr;  // the end of the run alone must leave the ranks agreeing
    train(train_job_from_json(j), comm, parts, sink);
    for (const auto& b : parts.model->buffers()) seen[static_cast<size_t>(comm.rank())].push_back(b.clone());
  });
  REQUIRE(seen[0].size() == seen[1].size());
  REQUIRE(!seen[0].empty());
  bool moved = false;
  for (size_t i = 0; i < seen[0].size(); ++i) {
    CHECK(at::equal(seen[0][i], seen[1][i]));
    moved = moved || seen[0][i].is_floating_point() && !at::equal(seen[0][i], at::zeros_like(seen[0][i])) &&
                         !at::equal(seen[0][i], at::ones_like(seen[0][i]));
  }
  CHECK(moved);  // the statistics did train
}
