// What a metrics.jsonl record shows as scalars, and a job as MLflow parameters.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "lib/tracking/scalars.hpp"

using namespace mtrain::tracking;
using nlohmann::json;

TEST_CASE("a record's numbers become mode/key scalars, the position keys do not", "[tracking][scalars]") {
  const json train = {{"mode", "train"}, {"step", 10}, {"epoch", 1}, {"iter", 10}, {"lr", 0.001},
                      {"loss", 2.5},     {"time", 0.2}, {"memory", 120}, {"loss_scale", 65536.0}};
  const auto s = scalars_of_record(train);
  std::map<std::string, double> m;
  for (const auto& x : s) m[x.tag] = x.value;
  CHECK(m == std::map<std::string, double>{{"train/lr", 0.001}, {"train/loss", 2.5}, {"train/time", 0.2},
                                           {"train/memory", 120}, {"train/loss_scale", 65536}});
  const auto v = scalars_of_record({{"mode", "val"}, {"step", 20}, {"loss", 1.5}, {"accuracy/top1", 50.0}});
  REQUIRE(v.size() == 2);
  CHECK(v[0].tag == "val/accuracy/top1");
  CHECK(v[1].tag == "val/loss");
}

TEST_CASE("a job's settings flatten to dotted parameters", "[tracking][scalars]") {
  const json job = {{"strategy", "ddp"}, {"train", {{"max_steps", 200}, {"work_dir", "w"}}},
                    {"fsdp", {{"wrap_module_types", json::array({"Block"})}}}, {"x", {{"long", std::string(7000, 'a')}}}};
  const mtrain::mlflow::KeyValues p = params_of_job(job);
  const std::map<std::string, std::string> m(p.begin(), p.end());
  CHECK(m.at("strategy") == "ddp");
  CHECK(m.at("train.max_steps") == "200");
  CHECK(m.at("train.work_dir") == "w");
  CHECK(m.at("fsdp.wrap_module_types") == "[\"Block\"]");
  CHECK(m.at("x.long").size() == 6000);
  CHECK(job_markdown({{"a", 1}}).rfind("```\n", 0) == 0);
}
