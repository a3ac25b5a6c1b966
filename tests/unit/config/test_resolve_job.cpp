// resolve_job: defaults < user file < job file < environment < flags < --set; docs in sync.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "lib/config/docs.hpp"
#include "lib/config/render.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/config/validate.hpp"
#include "lib/core/error.hpp"
#include "temp_dir.hpp"

using namespace mtrain::config;

namespace {
using mtrain::testing::TempDir;
}  // namespace

TEST_CASE("layers apply in the documented order", "[config][resolve]") {
  TempDir d;
  d.write("mtrain/config.yaml", "train:\n  max_steps: 1\n  seed: 1\n  log_interval: 1\n  val_steps: 1\n  threads: 1\n");
  const std::string job = d.write("job.yaml", "train:\n  seed: 2\n  log_interval: 2\n  val_steps: 2\n  threads: 2\n");
  JobInputs in;
  in.env = {{"XDG_CONFIG_HOME", d.str()}, {"MTRAIN_TRAIN_LOG_INTERVAL", "3"}, {"MTRAIN_TRAIN_VAL_STEPS", "3"},
            {"MTRAIN_TRAIN_THREADS", "3"}, {"UNRELATED", "x"}};
  in.job_file = job;
  in.flags = {{"train.val_steps", "4"}, {"train.threads", "4"}};
  in.sets = {"train.threads=5"};
  Resolved r = resolve_job(job_registry(), in);
  CHECK(get(r.job, "train.max_steps") == 1);
  CHECK(r.provenance.at("train.max_steps") == std::make_pair(Source::UserFile, d.str() + "/mtrain/config.yaml"));
  CHECK(get(r.job, "train.seed") == 2);
  CHECK(r.provenance.at("train.seed") == std::make_pair(Source::JobFile, job));
  CHECK(get(r.job, "train.log_interval") == 3);
  CHECK(r.provenance.at("train.log_interval") == std::make_pair(Source::Env, std::string("MTRAIN_TRAIN_LOG_INTERVAL")));
  CHECK(get(r.job, "train.val_steps") == 4);
  CHECK(r.provenance.at("train.val_steps").second == "--set train.val_steps");  // no flag of its own
  CHECK(get(r.job, "train.threads") == 5);
  CHECK(r.provenance.at("train.threads").second == "--set");
  CHECK(r.provenance.at("optim.lr").first == Source::Default);

  const std::string shown = show_yaml(job_registry(), r, true);
  CHECK_THAT(shown, Catch::Contains("max_steps: 1  # user config " + d.str() + "/mtrain/config.yaml"));
  CHECK_THAT(shown, Catch::Contains("log_interval: 3  # environment MTRAIN_TRAIN_LOG_INTERVAL"));
  CHECK_THAT(shown, Catch::Contains("lr: 0.001  # default"));
  json js = show_json(job_registry(), r, true);
  CHECK(js["sources"]["train.seed"]["source"] == "job file");
  CHECK(js["job"]["train"]["threads"] == 5);
}

TEST_CASE("a job file's relative input paths are from its own folder, flags' from the current folder (issue 45)",
          "[config][resolve]") {
  TempDir d;
  const std::string net = d.write("exp/net.pt", "zip");
  d.write("w.safetensors", "weights");
  const std::string job = d.write("exp/job.yaml",
                                  "model:\n  name: torchscript\n  path: net.pt\n  init: ../w.safetensors\n"
                                  "data:\n  name: tensors\n  path: data/train.pt\n  val_path: /abs/val.pt\n"
                                  "train:\n  work_dir: runs/a\n");
  JobInputs in;
  in.env = {{"HOME", "/nonexistent-home"}};
  in.job_file = job;
  Resolved r = resolve_job(job_registry(), in);
  CHECK(get(r.job, "model.path") == net);
  CHECK(get(r.job, "model.init") == d.str() + "/w.safetensors");
  CHECK(get(r.job, "data.path") == d.str() + "/exp/data/train.pt");
  CHECK(get(r.job, "data.val_path") == "/abs/val.pt");
  CHECK(get(r.job, "train.work_dir") == "runs/a");  // an output: from where mtrain runs
  // `config validate` reads it the same way: the model is found beside the job file.
  const ValidateReport v = validate_file(job_registry(), job);
  for (const auto& i : v.issues) CHECK_THAT(i.message, !Catch::Contains("model.path"));
  // A flag is from the current folder: taken as given.
  const std::string from_here = std::filesystem::relative(net).string();
  in.flags = {{"model.path", from_here}};
  CHECK(get(resolve_job(job_registry(), in).job, "model.path") == from_here);
}

TEST_CASE("user file defaults to ~/.config and is skipped when missing", "[config][resolve]") {
  CHECK(default_user_file({{"HOME", "/home/u"}}) == "/home/u/.config/mtrain/config.yaml");
  CHECK(default_user_file({{"HOME", "/home/u"}, {"XDG_CONFIG_HOME", "/x"}}) == "/x/mtrain/config.yaml");
  JobInputs in;
  in.env = {{"HOME", "/nonexistent-home"}};
  CHECK_NOTHROW(resolve_job(job_registry(), in));
}

TEST_CASE("resolve_job errors name where the bad value came from", "[config][resolve]") {
  TempDir d;
  JobInputs in;
  in.user_file = "/nonexistent";
  in.env = {{"MTRAIN_STRATEGY", "zero7"}};
  CHECK_THROWS_WITH(resolve_job(job_registry(), in), Catch::Contains("environment variable MTRAIN_STRATEGY"));
  in.env.clear();
  in.job_file = d.write("bad.yaml", "optim:\n  lr: -1\n  nope: 1\n");
  try {
    resolve_job(job_registry(), in);
    FAIL("no error");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.message(), Catch::Contains("bad.yaml:2:7") && Catch::Contains("bad.yaml:3:3") && Catch::Contains("2 problems"));
    CHECK(e.exit_code() == 2);
  }
  in.job_file = d.write("cross.yaml", "strategy: ddp\nzero:\n  offload_param_device: cpu\n");
  CHECK_THROWS_WITH(resolve_job(job_registry(), in),
                    Catch::Contains("zero.offload_param_device from " + d.str() + "/cross.yaml"));
  in.job_file.clear();
  in.sets = {"noequals"};
  CHECK_THROWS_WITH(resolve_job(job_registry(), in), Catch::Contains("not key=value"));
  in.sets = {"optim.lrr=1"};
  CHECK_THROWS_WITH(resolve_job(job_registry(), in), Catch::Contains("Did you mean 'optim.lr'"));
}

TEST_CASE("docs/settings.md is generated from the registry and up to date", "[config][docs]") {
  std::ifstream f(std::string(MTRAIN_SOURCE_DIR) + "/docs/settings.md");
  REQUIRE(f);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string md = settings_markdown(job_registry());
  INFO("regenerate with: build/bin/mtrain config docs -o docs/settings.md");
  CHECK(ss.str() == md);
  for (const auto& s : job_registry().all()) CHECK_THAT(md, Catch::Contains("`" + s.key + "`"));
}
