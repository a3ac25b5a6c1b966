// The checks the launcher makes before any rank starts (config/data_checks, config/launch_checks).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "lib/config/data_checks.hpp"
#include "lib/config/launch_checks.hpp"
#include "lib/core/error.hpp"
#include "temp_dir.hpp"

using namespace mtrain::config;
namespace fs = std::filesystem;

namespace {
// The job spec the ranks get, with `values` over the defaults.
json job(std::map<std::string, json> values) {
  const auto& reg = job_registry();
  return job_spec(reg, resolve(reg, {Layer{Source::JobFile, "job.yaml", std::move(values)}}).job);
}
using mtrain::testing::TempDir;
std::string paragraph_of(const json& j, long long world) {
  try {
    check_before_launch(j, world);
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == mtrain::kExitUsage);
    return e.paragraph();
  }
  return "";
}
}  // namespace

TEST_CASE("model/data combinations that cannot train", "[config][launch_checks]") {
  auto bad = data_model_problems(job({{"model.name", "resnet18"}, {"data.name", "text"}}));
  REQUIRE(bad.size() == 1);
  CHECK_THAT(bad[0].message, Catch::Contains("resnet18") && Catch::Contains("text"));
  CHECK(data_model_problems(job({{"model.name", "gpt"}, {"data.name", "cifar10"}})).size() == 1);
  CHECK(data_model_problems(job({{"model.name", "mlp"}, {"data.name", "cifar10"}})).size() == 1);  // input_dim 32
  CHECK(data_model_problems(job({{"model.name", "mlp"}, {"data.name", "cifar10"}, {"model.input_dim", 3072}})).empty());
  CHECK(data_model_problems(job({{"model.name", "resnet18"}, {"data.name", "cifar10"}})).empty());
  CHECK(data_model_problems(job({{"model.name", "resnet18"}})).empty());  // auto → synthetic
  CHECK(data_model_problems(job({})).empty());                          // gpt + auto → text
  CHECK(data_model_problems(job({{"data.name", "text"}, {"model.vocab_size", 100}})).size() == 1);
  CHECK(effective_data_name(job({{"model.name", "mlp"}})) == DataName::Synthetic);
}

TEST_CASE("data.path must exist as the dataset needs it", "[config][launch_checks]") {
  TempDir d;
  CHECK(data_file_problems(job({}), true).empty());  // the embedded corpus
  auto missing = data_file_problems(job({{"data.path", (d.path / "nope.txt").string()}}), true);
  REQUIRE(missing.size() == 1);
  CHECK_THAT(missing[0].message, Catch::Contains("does not exist"));
  CHECK(missing[0].keys[0] == "data.path");
  CHECK_THAT(data_file_problems(job({{"data.path", d.path.string()}}), true)[0].message, Catch::Contains("is a folder"));
  std::ofstream(d.path / "corpus.txt") << "hello";
  CHECK(data_file_problems(job({{"data.path", (d.path / "corpus.txt").string()}}), true).empty());

  const json cifar = job({{"model.name", "resnet18"}, {"data.name", "cifar10"}, {"data.path", d.path.string()}});
  auto lacks = data_file_problems(cifar, true);
  REQUIRE(lacks.size() == 1);
  CHECK_THAT(lacks[0].message, Catch::Contains("data_batch_1.bin") && Catch::Contains("test_batch.bin"));
  for (const char* f : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                        "data_batch_5.bin", "test_batch.bin"})
    std::ofstream(d.path / f) << "x";
  CHECK(data_file_problems(cifar, true).empty());
  CHECK(data_file_problems(job({{"model.name", "resnet18"}, {"data.name", "cifar10"}}), true).size() == 1);  // no path
}

TEST_CASE("data files: one table, every dataset, with and without the disk", "[config][launch_checks]") {
  TempDir d;
  const std::string missing = (d.path / "none.bin").string();
  const std::string odd = (d.path / "odd.bin").string();
  std::ofstream(odd) << "abc";  // a raw token file of an odd number of bytes
  const std::string even = (d.path / "even.bin").string();
  std::ofstream(even) << "abcd";
  struct Row {
    std::map<std::string, json> values;
    size_t settings_only, on_disk;  // problems without and with the disk
    std::string first;              // the first problem's words ("" when none)
  };
  const std::vector<Row> rows = {
      {{{"data.name", "synthetic"}, {"data.path", missing}}, 0, 0, ""},  // synthetic reads no file
      {{{"data.name", "text"}}, 0, 0, ""},                               // the embedded corpus
      {{{"data.name", "text"}, {"data.path", missing}}, 0, 1, "does not exist"},
      {{{"model.name", "resnet18"}, {"data.name", "cifar10"}}, 1, 1, "data.path is empty but data.name is cifar10"},
      {{{"data.name", "tensors"}}, 1, 1, "data.path is empty but data.name is tensors"},
      {{{"data.name", "tensors"}, {"data.path", even}, {"data.val_path", missing}}, 0, 1, "data.val_path"},
      {{{"data.name", "tokens"}}, 1, 1, "data.path is empty but data.name is tokens"},
      {{{"data.name", "tokens"}, {"data.path", even}}, 0, 0, ""},
      {{{"data.name", "tokens"}, {"data.path", odd}}, 0, 1, "an odd number"},
      {{{"data.name", "tokens"}, {"data.path", even}, {"data.val_path", odd}}, 0, 1, "data.val_path"},
  };
  for (const auto& row : rows) {
    const json j = job(row.values);
    INFO(j.at("data").dump());
    CHECK(data_file_problems(j, false).size() == row.settings_only);
    const auto all = data_file_problems(j, true);
    REQUIRE(all.size() == row.on_disk);
    if (!row.first.empty()) CHECK_THAT(all[0].message, Catch::Contains(row.first));
    // The launcher's throwing form says the first of them.
    if (row.first.empty()) CHECK_NOTHROW(check_data_files(j));
    else CHECK_THROWS_WITH(check_data_files(j), Catch::Contains(row.first));
  }
}

TEST_CASE("train.work_dir must be writable or creatable", "[config][launch_checks]") {
  TempDir d;
  CHECK(work_dir_problems(job({{"train.work_dir", (d.path / "a" / "b").string()}})).empty());
  std::ofstream(d.path / "file") << "x";
  auto under_file = work_dir_problems(job({{"train.work_dir", (d.path / "file" / "wd").string()}}));
  REQUIRE(under_file.size() == 1);
  CHECK(under_file[0].keys[0] == "train.work_dir");
  CHECK_THAT(under_file[0].message, Catch::Contains("is not a folder"));
  CHECK_THAT(under_file[0].hint, Catch::Contains("train.work_dir"));
  if (geteuid() != 0) {  // root writes anywhere
    fs::create_directory(d.path / "ro");
    fs::permissions(d.path / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    auto ro = work_dir_problems(job({{"train.work_dir", (d.path / "ro" / "wd").string()}}));
    REQUIRE(ro.size() == 1);
    CHECK_THAT(ro[0].message, Catch::Contains("not writable"));
  }
}

TEST_CASE("resume PATH needs a complete checkpoint", "[config][launch_checks]") {
  TempDir d;
  CHECK(resume_problems(job({{"checkpoint.resume", "auto"}})).empty());
  CHECK_THAT(resume_problems(job({{"checkpoint.resume", (d.path / "x").string()}}))[0].message,
             Catch::Contains("does not exist"));
  fs::create_directories(d.path / "step_10");
  std::ofstream(d.path / "step_10" / "manifest.json") << "{}";
  auto incomplete = resume_problems(job({{"checkpoint.resume", (d.path / "step_10").string()}}));
  REQUIRE(incomplete.size() == 1);
  CHECK_THAT(incomplete[0].message, Catch::Contains("COMPLETE is missing"));
  CHECK_THAT(resume_problems(job({{"checkpoint.resume", d.path.string()}}))[0].message,
             Catch::Contains("a folder of checkpoints"));
  std::ofstream(d.path / "step_10" / "COMPLETE") << "step 10\n";
  CHECK(resume_problems(job({{"checkpoint.resume", (d.path / "step_10").string()}})).empty());
}

// Issue 45: a fresh run into a work dir that held a finished run's checkpoints mixed with them.
TEST_CASE("a fresh run beside another run's checkpoints is refused, resume and overwrite pass",
          "[config][launch_checks]") {
  TempDir d;
  const std::string wd = (d.path / "wd").string();
  CHECK(earlier_run_problems(job({{"train.work_dir", wd}})).empty());  // no work dir yet
  fs::create_directories(d.path / "wd" / "checkpoints" / "step_40");
  fs::create_directories(d.path / "wd" / "checkpoints" / "step_50");
  fs::create_directories(d.path / "wd" / "checkpoints" / "step_60");  // interrupted: no COMPLETE
  fs::create_directories(d.path / "wd" / "checkpoints" / ".tmp_step_70");
  CHECK(earlier_run_problems(job({{"train.work_dir", wd}})).empty());  // nothing complete
  std::ofstream(d.path / "wd" / "checkpoints" / "step_40" / "COMPLETE") << "step 40\n";
  std::ofstream(d.path / "wd" / "checkpoints" / "step_50" / "COMPLETE") << "step 50\n";
  auto mixed = earlier_run_problems(job({{"train.work_dir", wd}}));
  REQUIRE(mixed.size() == 1);
  CHECK(mixed[0].error);
  CHECK_THAT(mixed[0].message, Catch::Contains("holds another run's checkpoints (step_50, step_40)"));
  CHECK_THAT(mixed[0].hint, Catch::Contains("--resume auto (from step 50") && Catch::Contains("a fresh --work-dir") &&
                                Catch::Contains("--overwrite"));
  CHECK_THAT(paragraph_of(job({{"train.work_dir", wd}}), 2),
             Catch::Contains("holds another run's checkpoints") && Catch::Contains("(nothing was started)"));
  // A node joining through the rendezvous (world 0) may scale up the running job they belong to.
  CHECK(paragraph_of(job({{"train.work_dir", wd}}), 0).empty());
  CHECK(earlier_run_problems(job({{"train.work_dir", wd}, {"checkpoint.resume", "auto"}})).empty());
  CHECK(earlier_run_problems(job({{"train.work_dir", wd}, {"checkpoint.overwrite", true}})).empty());
}

TEST_CASE("the planned world must divide the global batch", "[config][launch_checks]") {
  const json j = job({{"train.batch_size", 4}, {"train.global_batch_size", 12}});
  CHECK(batch_problems(j, 3).empty());
  auto bad = batch_problems(j, 2);
  REQUIRE(bad.size() == 1);
  CHECK_THAT(bad[0].message, Catch::Contains("world size 2 is 8"));
  CHECK_THAT(batch_problems(job({{"train.batch_size", 4}, {"train.global_batch_size", 20}}), 3)[0].hint,
             Catch::Contains("cannot be split evenly over 3 ranks"));
}

TEST_CASE("check_before_launch: one paragraph, exit 2, every problem", "[config][launch_checks]") {
  TempDir d;
  const std::string wd = (d.path / "wd").string();
  CHECK(paragraph_of(job({{"train.work_dir", wd}}), 2).empty());
  const std::string one = paragraph_of(job({{"train.work_dir", wd}, {"model.name", "resnet18"}, {"data.name", "text"}}), 2);
  CHECK_THAT(one, Catch::Contains("nothing was started"));
  const std::string two = paragraph_of(
      job({{"train.work_dir", wd}, {"data.path", "/nonexistent/corpus.txt"}, {"checkpoint.resume", wd}}), 2);
  CHECK_THAT(two, Catch::Contains("data.path") && Catch::Contains("--resume"));
}
