// One grammar per value: for every string of a table, `mtrain config validate`'s check (the
// registry's check of the setting) and the launcher's own reading accept and refuse alike, and a
// refusal carries the same problem text (both come from one reader: core/index_list for GPU and
// rank lists, config/slurm_time for Slurm's --time).
#include <algorithm>
#include <set>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "lib/config/registry.hpp"
#include "lib/config/slurm_time.hpp"
#include "lib/core/error.hpp"
#include "lib/core/index_list.hpp"
#include "lib/launch/launch.hpp"
#include "lib/launch/launch_settings.hpp"
#include "lib/plan/plan.hpp"
#include "lib/slurm/job_options.hpp"

using namespace mtrain;

namespace {

// The registry's verdict on `text` for `key`: "" when accepted, else the whole error.
std::string validator_says(const std::string& key, const std::string& text) {
  const auto& reg = config::job_registry();
  try {
    (void)reg.parse_text(reg.require(key), text);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

template <class F>
std::string launcher_says(F&& run) {
  try {
    run();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// Accepted and refused by the validator and by the launcher alike, with the reader's problem.
void agree(const std::string& validator, const std::string& launcher, const std::string& problem) {
  CHECK(validator.empty() == problem.empty());
  CHECK(launcher.empty() == problem.empty());
  if (!problem.empty()) {
    CHECK_THAT(validator, Catch::Contains(problem));
    CHECK_THAT(launcher, Catch::Contains(problem));
  }
}

// --gpus is all a plan needs to differ here; the rest stays at PlanOptions' defaults.
plan::PlanOptions plan_options() {
  plan::PlanOptions o;
  o.program = {"python3", "train.py"};
  return o;
}

const std::vector<std::string> kIndexTexts = {
    "",    "all", " all ", "0",   "0,1,3", "0-3", "1-2,5",   " 2, 0 ,2", "3-3",     "7",       "x",   "0,,1",
    "-1",  "3-1", "1-",    "0-x", "all,1", "1.5", "0;1",     "1048577",  "0-1048577", "0,1,",  " , ", "ALL"};

}  // namespace

TEST_CASE("launch.gpus: config validate and the launcher's --gpus read one grammar", "[grammar][gpus]") {
  plan::HostFacts f;
  f.gpu_pool = {0, 1, 2, 3, 4, 5, 6, 7};
  f.gpu_pool_source = "detected";
  f.cpu_count = 8;
  for (const auto& text : kIndexTexts) {
    INFO("--gpus '" << text << "'");
    plan::PlanOptions o = plan_options();
    o.gpus = text;
    agree(validator_says("launch.gpus", text), launcher_says([&] { (void)plan::build_plan(o, f); }),
          read_index_selection(text, "GPU id").problem);
  }
  // "all" is every GPU, as an empty --gpus is (the launcher used to refuse it, and 0-3).
  plan::PlanOptions o = plan_options();
  o.gpus = "all";
  CHECK(plan::build_plan(o, f).world_size == 8);
  o.gpus = "2-4";
  CHECK(plan::build_plan(o, f).world_size == 3);
}

TEST_CASE("launch.ranks_filter: config validate and the launcher read one grammar", "[grammar][ranks]") {
  const auto& bindings = launch::launch_bindings();
  const auto it = std::find_if(bindings.begin(), bindings.end(),
                               [](const launch::LaunchBinding& b) { return b.key == "launch.ranks_filter"; });
  REQUIRE(it != bindings.end());
  for (const auto& text : kIndexTexts) {
    INFO("--ranks-filter '" << text << "'");
    launch::LaunchOptions o;
    agree(validator_says("launch.ranks_filter", text), launcher_says([&] { it->set(o, config::json(text), true); }),
          read_index_selection(text, "rank").problem);
  }
  launch::LaunchOptions o;
  it->set(o, config::json("0-2,5"), true);
  CHECK(o.output.ranks_filter == std::set<int>{0, 1, 2, 5});
}

TEST_CASE("slurm.time: config validate and the Slurm job's limit read one grammar", "[grammar][time]") {
  // text → seconds (-1: no limit; refused texts give -1 and a problem).
  const std::vector<std::pair<std::string, long long>> table = {
      {"", -1},          {"UNLIMITED", -1},   {"infinite", -1},        {"30", 1800},         {"1:30", 90},
      {"2:00:00", 7200}, {"1-0", 86400},      {"1-12", 129600},        {"1-12:30", 131400},  {"0-0:0:5", 5},
      {"1-12:00:00", 129600}, {"soon", -1},   {"1-", -1},              {"-5", -1},           {"1:2:3:4", -1},
      {"5:", -1},        {"x-1", -1},         {"1-2:3:4:5", -1},       {"Unlimited", -1},    {"1.5", -1},
      {"1234567890123456789", -1},            {"999999999999999999-0", -1}};
  for (const auto& [text, seconds] : table) {
    INFO("--time '" << text << "'");
    const auto reading = config::read_slurm_time(text);
    CHECK(reading.seconds == seconds);
    const std::string validator = validator_says("slurm.time", text);
    CHECK(validator.empty() == reading.problem.empty());
    if (!reading.problem.empty()) CHECK_THAT(validator, Catch::Contains(reading.problem));
    if (seconds <= 0) continue;
    // The Slurm job reads the same limit: a signal that many seconds before it is refused,
    // one second fewer is not.
    slurm::JobOptions job;
    job.mtrain = "/usr/bin/mtrain";
    job.time = text;
    job.signal = "USR1@" + std::to_string(seconds);
    CHECK_THROWS_WITH(slurm::finalize(job, "/w"), Catch::Contains(fmt::format("of only {} s", seconds)));
    job.signal = "USR1@" + std::to_string(seconds - 1);
    CHECK_NOTHROW(slurm::finalize(job, "/w"));
  }
}
