// `mtrain config` as users run it: exit codes, positions on stderr, imports to files, show.
#include <catch2/catch.hpp>

#include "run.hpp"

using namespace e2e;

TEST_CASE("config validate: exit 0 for valid, 2 with every error positioned", "[e2e][config]") {
  TempDir d("validate");
  Run ok = run(mtrain() + " config init --defaults -o " + d.path + "/job.yaml && " + mtrain() + " config validate " + d.path + "/job.yaml");
  CHECK(ok.rc == 0);
  CHECK_THAT(ok.out, Catch::Contains("valid ("));
  const std::string bad = data("invalid/many_errors.yaml");
  Run r = run(mtrain() + " config validate " + bad);
  CHECK(r.rc == 2);
  CHECK_THAT(r.out, Catch::Contains(bad + ":2:11: error: setting 'strategy' got 'zero5'"));
  CHECK_THAT(r.out, Catch::Contains(bad + ":4:7: error: setting 'optim.lr' got 'fast'"));
  CHECK_THAT(r.out, Catch::Contains(bad + ":5:3: error: unknown setting 'optim.betaa1'"));
  CHECK_THAT(r.out, Catch::Contains(bad + ":7:15: error: setting 'train.batch_size' got '-1'"));
  CHECK_THAT(r.out, Catch::Contains("invalid, 4 errors"));
  Run js = run(mtrain() + " config validate --format json " + data("invalid/unknown_key.yaml"));
  CHECK(js.rc == 2);
  CHECK_THAT(js.out, Catch::Contains("\"line\": 2") && Catch::Contains("\"column\": 3"));
  Run missing = run(mtrain() + " config validate /nonexistent/job.yaml");
  CHECK(missing.rc == 2);
  CHECK_THAT(missing.out, Catch::Contains("cannot read the file"));
}

TEST_CASE("config import: each seed becomes a job that validates and shows its sources", "[e2e][config]") {
  TempDir d("import");
  for (const char* seed : {"ds_zero3_hf.json", "ds_zero3_resnet.json", "ds_mmengine_strategy.json", "accelerate_deepspeed.yaml"}) {
    DYNAMIC_SECTION(seed) {
      const std::string out = d.path + "/" + seed + ".job.yaml";
      Run r = run(mtrain() + " config import " + data(std::string("seeds/") + seed) + " -o " + out);
      INFO(r.out);
      CHECK(r.rc == 0);
      CHECK_THAT(r.out, Catch::Contains("Wrote " + out));
      CHECK_THAT(slurp(out), Catch::Contains("strategy: zero3"));
      CHECK(run(mtrain() + " config validate " + out).rc == 0);
      Run again = run(mtrain() + " config import " + data(std::string("seeds/") + seed) + " -o " + out);
      CHECK(again.rc == 2);
      CHECK_THAT(again.out, Catch::Contains("already exists"));
      Run show = run(mtrain() + " config show --sources --config " + out);
      CHECK(show.rc == 0);
      CHECK_THAT(show.out, Catch::Contains("strategy: zero3  # job file " + out));
    }
  }
}

TEST_CASE("config show: layering from file, environment, flags and --set", "[e2e][config]") {
  TempDir d("show");
  run("printf \"train:\\n  max_steps: 50\\n  seed: 9\\noptim:\\n  lr: 0.1\\n\" > " + d.path + "/job.yaml");
  Run r = run("XDG_CONFIG_HOME=" + d.path + "/none MTRAIN_SEED=4 MTRAIN_LR=0.2 " + mtrain() + " config show --sources --config " +
              d.path + "/job.yaml --lr 0.3 --set train.max_steps=7");
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("max_steps: 7  # command line --set"));
  CHECK_THAT(r.out, Catch::Contains("seed: 4  # environment MTRAIN_SEED"));
  CHECK_THAT(r.out, Catch::Contains("lr: 0.3  # command line --lr"));
  CHECK_THAT(r.out, Catch::Contains("strategy: ddp  # default"));
  Run js = run(mtrain() + " config show --format json --set strategy=zero2");
  CHECK(js.rc == 0);
  CHECK_THAT(js.out, Catch::Contains("\"strategy\": \"zero2\""));
  Run bad = run(mtrain() + " config show --set strategy=zero9");
  CHECK(bad.rc == 2);
  CHECK_THAT(bad.out, Catch::Contains("--set strategy=zero9") && Catch::Contains("did you mean"));
  // `config show --help` lists its own flags only (issue 45 item 7); the setting flags it accepts are
  // listed, with their environment variables, where they belong: `mtrain launch --help`.
  Run help = run(mtrain() + " config show --help");
  CHECK_THAT(help.out, Catch::Contains("--sources") && !Catch::Contains("--nproc-per-node"));
  Run launch_help = run(mtrain() + " launch --help");
  CHECK_THAT(launch_help.out, Catch::Contains("--nproc-per-node") && Catch::Contains("env MTRAIN_NPROC_PER_NODE"));
}

TEST_CASE("config docs matches docs/settings.md", "[e2e][config]") {
  Run r = run(mtrain() + " config docs | diff - " + std::string(MTRAIN_SOURCE_DIR) + "/docs/settings.md");
  INFO(r.out);
  CHECK(r.rc == 0);
}
