// The environment variables `mtrain env` lists (lib/envreport/env_vars.cpp): every MTRAIN_* that
// is set, checked by the registry as the job would parse it (a bad value or an unknown name says
// so), and the libraries' well-known variables, set or not.
#include <catch2/catch.hpp>

#include <set>

#include "lib/envreport/report.hpp"

using namespace mtrain::envreport;

namespace {
const json& entry(const json& all, const std::string& name) {
  for (const auto& e : all)
    if (e["name"] == name) return e;
  static const json none;
  FAIL("no entry " << name);
  return none;
}
}  // namespace

TEST_CASE("env_vars: mtrain's own variables are the registry's settings, checked", "[envreport][env_vars]") {
  const json all = probe_environment({{"MTRAIN_TRAIN_LOG_INTERVAL", "5"},
                                      {"MTRAIN_TRAIN_VAL_STEPS", "many"},
                                      {"MTRAIN_TRAIN_LOG_INTERVALL", "5"},
                                      {"HOME", "/home/u"}});
  const json& good = entry(all, "MTRAIN_TRAIN_LOG_INTERVAL");
  CHECK(good["setting"] == "train.log_interval");
  CHECK(good["value"] == "5");
  CHECK(good["source"] == "environment");
  CHECK(good["used_by"] == "mtrain");
  CHECK_FALSE(good.contains("problem"));
  CHECK_FALSE(good["meaning"].get<std::string>().empty());

  const json& bad = entry(all, "MTRAIN_TRAIN_VAL_STEPS");
  CHECK(bad["setting"] == "train.val_steps");
  CHECK_THAT(bad["problem"].get<std::string>(), Catch::Contains("many"));

  const json& unknown = entry(all, "MTRAIN_TRAIN_LOG_INTERVALL");
  CHECK(unknown["setting"].is_null());
  CHECK(unknown["problem"] == "unknown variable; did you mean MTRAIN_TRAIN_LOG_INTERVAL?");
  for (const auto& e : all) CHECK(e["name"] != "HOME");  // not one that changes what mtrain does
}

TEST_CASE("env_vars: the libraries' variables are listed set or unset", "[envreport][env_vars]") {
  const json all = probe_environment({{"NCCL_DEBUG", "INFO"}});
  const json& set = entry(all, "NCCL_DEBUG");
  CHECK(set["value"] == "INFO");
  CHECK(set["source"] == "environment");
  CHECK(set["used_by"] == "NCCL");
  const json& unset = entry(all, "CUDA_VISIBLE_DEVICES");
  CHECK(unset["value"].is_null());
  CHECK(unset["source"] == "unset");
  // Without MTRAIN_* variables only the well-known list, each once.
  std::set<std::string> names;
  for (const auto& e : probe_environment({})) {
    CHECK(e["used_by"] != "mtrain");
    CHECK(names.insert(e["name"].get<std::string>()).second);
  }
  CHECK(names.count("OMP_NUM_THREADS") == 1);
  CHECK(names.count("GLOO_SOCKET_IFNAME") == 1);
}
