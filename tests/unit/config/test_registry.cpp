#include <catch2/catch.hpp>

#include "mtrain/config/registry.hpp"
#include "mtrain/core/error.hpp"

using namespace mtrain::config;

TEST_CASE("defaults hold every setting, nested by dotted key", "[config]") {
  const auto& reg = job_registry();
  json d = reg.defaults();
  for (const auto& s : reg.all()) CHECK(get(d, s.key) == s.default_value);
  CHECK(d["train"]["max_steps"] == 200);
  CHECK(d["strategy"] == "ddp");
}

TEST_CASE("text values are parsed by type and range-checked", "[config]") {
  const auto& reg = job_registry();
  CHECK(reg.parse_text(reg.require("train.max_steps"), "12") == 12);
  CHECK(reg.parse_text(reg.require("optim.lr"), "3e-4") == Approx(3e-4));
  CHECK(reg.parse_text(reg.require("data.shuffle"), "false") == false);
  CHECK_THROWS_WITH(reg.parse_text(reg.require("train.batch_size"), "0"),
                    Catch::Contains("below the minimum"));
  CHECK_THROWS_WITH(reg.parse_text(reg.require("strategy"), "zero4"),
                    Catch::Contains("one of ddp, zero1") && Catch::Contains("did you mean"));
  CHECK_THROWS_WITH(reg.parse_text(reg.require("train.max_steps"), "10x"), Catch::Contains("'10x'"));
}

TEST_CASE("unknown keys name the closest valid key", "[config]") {
  const auto& reg = job_registry();
  CHECK_THROWS_WITH(reg.require("optim.lrr"), Catch::Contains("Did you mean 'optim.lr'"));
  json job = {{"optim", {{"lrr", 0.1}}}};
  CHECK_THROWS_WITH(load_job(reg, job, "job.json"),
                    Catch::Contains("job.json") && Catch::Contains("optim.lr"));
}

TEST_CASE("layers apply in order and record provenance", "[config]") {
  const auto& reg = job_registry();
  Layer file{Source::JobFile, "job.yaml", {{"train.max_steps", 50}, {"optim.lr", 0.1}}};
  Layer cli{Source::Cli, "command line", {{"train.max_steps", 7}}};
  auto r = resolve(reg, {file, cli});
  CHECK(get(r.job, "train.max_steps") == 7);
  CHECK(get(r.job, "optim.lr") == Approx(0.1));
  CHECK(r.provenance["train.max_steps"].first == Source::Cli);
  CHECK(r.provenance["optim.lr"].second == "job.yaml");
  CHECK(r.provenance["strategy"].first == Source::Default);
}

TEST_CASE("flags derive their environment variable", "[config]") {
  const auto& reg = job_registry();
  CHECK(reg.find_flag("max-steps")->env == "MTRAIN_MAX_STEPS");
  CHECK(reg.find_flag("strategy")->key == "strategy");
}
