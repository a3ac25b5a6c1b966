// Every setting can be set from YAML, from CLI-style text (flag / --set) and from its environment
// variable, and `config show` reports where it came from.
#include <map>

#include <catch2/catch.hpp>

#include "lib/config/render.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/config/yaml_layer.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::config;

namespace {

// A valid value different from the default (and one the cross-field checks accept).
json sample(const Setting& s) {
  static const std::map<std::string, json> fitting = {
      {"zero.stage", 3}, {"model.n_head", 8}, {"model.n_embd", 256}, {"train.global_batch_size", 32},
      {"sched.min_lr", 0.0005}, {"launch.device_memory", "80GiB"},
      {"log.mlflow.uri", "http://127.0.0.1:5000/mlflow"}, {"log.mlflow.tags", json::array({"team=nlp", "stage=a b"})}};
  if (auto it = fitting.find(s.key); it != fitting.end()) return it->second;
  switch (s.type) {
    case Type::Bool: return s.default_value.is_boolean() ? !s.default_value.get<bool>() : true;  // 'auto'
    case Type::Int: {
      long long d = s.default_value.get<long long>();
      long long v = (s.max && d + 1 > *s.max) ? d - 1 : d + 1;
      return v;
    }
    case Type::Float: {
      double d = s.default_value.get<double>();
      double v = d + 0.5;
      if (s.max && v > *s.max) v = (d + *s.min) / 2;
      return v;
    }
    case Type::Choice:
      for (const auto& c : s.choices)
        if (c != s.default_value) return c;
      return s.default_value;
    case Type::String:
      if (s.list) return json::array({"some value/with space", "a second"});
      if (s.key == "launch.nproc_per_node") return "3";
      if (s.key == "launch.nnodes") return "2:4";
      if (s.key == "slurm.mem") return "64G";
      if (s.key == "slurm.signal") return "TERM@30";
      if (s.key == "launch.gpus") return "0,2";
      if (s.key == "launch.ranks_filter") return "0,3";
      if (s.key == "slurm.time") return "1-02:00:00";
      // Read before any rank starts: must name a file that exists.
      if (s.key == "model.init" || s.key == "model.path" || s.key == "model.eval_path")
        return std::string(MTRAIN_SOURCE_DIR) + "/README.md";
      return "some value/with space";
  }
  return nullptr;
}

// As a flag, --set or a variable gives it; a list's items separated by the setting's
// list_separator (registry.hpp).
std::string as_text(const json& v, char separator = '\n') {
  if (v.is_array()) {
    std::string out;
    for (const auto& item : v) out += (out.empty() ? "" : std::string(1, separator)) + as_text(item);
    return out;
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

TEST_CASE("every setting round-trips through YAML, text and environment with its source", "[config]") {
  const auto& reg = job_registry();
  for (const auto& s : reg.all()) {
    DYNAMIC_SECTION(s.key) {
      const json v = sample(s);
      REQUIRE(v != s.default_value);

      // YAML, as `config init` / `config import` write it, read back by the loader; a setting of
      // one node or run (--node-rank …) is refused there, at its key.
      const std::string yaml = to_yaml(reg, {{s.key, v}});
      YamlLayer y = parse_yaml_layer(reg, yaml, "job.yaml", Source::JobFile);
      INFO(yaml);
      if (s.per_invocation) {
        REQUIRE(y.issues.size() == 1);
        CHECK(y.issues[0].error);
        CHECK(y.issues[0].where.line >= 1);
        CHECK_THAT(y.issues[0].text(), Catch::Contains("'" + s.key + "' cannot come from a job file") &&
                                           Catch::Contains(dashed(cli_flag(s))) && Catch::Contains(s.env));
      } else {
        REQUIRE(y.issues.empty());
        CHECK(y.layer.values.at(s.key) == v);
        CHECK(y.positions.at(s.key).line >= 1);
      }

      // CLI-style text: the same parser serves flags, --set and the wizard.
      CHECK(reg.parse_text(s, as_text(v, s.list_separator)) == v);

      // Each layer wins over the ones below, and provenance names it.
      // ZeRO knobs need a ZeRO strategy to pass the cross-field checks.
      // A model.path is read by model torchscript only, which trains on data of its own (issue 45).
      const std::string readme = std::string(MTRAIN_SOURCE_DIR) + "/README.md";
      const std::vector<std::string> companions =
          s.key.rfind("zero.", 0) == 0 ? std::vector<std::string>{"strategy=zero3"}
          : s.key == "model.path"
              ? std::vector<std::string>{"model.name=torchscript", "data.name=tensors", "data.path=" + readme}
          : s.key == "model.eval_path" ? std::vector<std::string>{"model.name=torchscript", "data.name=tensors",
                                                                  "data.path=" + readme, "model.path=" + readme}
                                       : std::vector<std::string>{};
      JobInputs in;
      in.user_file = "/nonexistent/mtrain-user.yaml";
      in.sets = companions;
      in.env[s.env] = as_text(v, s.list_separator);
      Resolved r = resolve_job(reg, in);
      CHECK(get(r.job, s.key) == v);
      CHECK(r.provenance.at(s.key).first == Source::Env);
      CHECK(r.provenance.at(s.key).second == s.env);

      in.env.clear();
      in.sets = companions;
      in.sets.push_back(s.key + "=" + as_text(v, s.list_separator));
      if (s.per_invocation) {
        CHECK_THROWS_WITH(resolve_job(reg, in), Catch::Contains("'" + s.key + "' cannot come from --set"));
        // `config show` prints the job, which a value of this run is no part of.
        const std::string name = s.key.substr(s.key.find('.') + 1);
        CHECK(show_json(reg, r, false)["launch"].contains("launcher"));
        CHECK_FALSE(show_json(reg, r, false)["launch"].contains(name));
        CHECK_FALSE(show_json(reg, r, true)["sources"].contains(s.key));
      } else {
        r = resolve_job(reg, in);
        CHECK(get(r.job, s.key) == v);
        CHECK(r.provenance.at(s.key) == std::make_pair(Source::Cli, std::string("--set")));
        CHECK_THAT(show_yaml(reg, r, true), Catch::Contains("# command line --set"));
      }
    }
  }
}

TEST_CASE("flags map by setting key and name their flag as origin", "[config]") {
  const auto& reg = job_registry();
  JobInputs in;
  in.user_file = "/nonexistent/x.yaml";
  in.flags["train.max_steps"] = "12";
  Resolved r = resolve_job(reg, in);
  CHECK(get(r.job, "train.max_steps") == 12);
  CHECK(r.provenance.at("train.max_steps").second == "--max-steps");
  in.flags["train.max_steps"] = "twelve";
  CHECK_THROWS_WITH(resolve_job(reg, in), Catch::Contains("--max-steps") && Catch::Contains("'twelve'"));
}
