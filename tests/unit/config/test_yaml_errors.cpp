// Invalid job files → exact positions, key paths, values, allowed values and suggestions.
#include <catch2/catch.hpp>

#include "lib/config/validate.hpp"
#include "lib/config/yaml_layer.hpp"

using namespace mtrain::config;

namespace {
std::string fixture(const std::string& name) { return std::string(MTRAIN_SOURCE_DIR) + "/tests/data/config/invalid/" + name; }

struct Case {
  const char* file;
  int line, column;
  const char* key;
  std::vector<const char*> says;
};
}  // namespace

TEST_CASE("invalid files report the exact position of each error", "[config]") {
  const std::vector<Case> table = {
      {"unknown_key.yaml", 2, 3, "optim.lrr", {"unknown setting 'optim.lrr'", "Did you mean 'optim.lr'"}},
      {"unknown_section.yaml", 1, 1, "trian", {"unknown setting 'trian'", "Did you mean 'train'"}},
      {"bad_int.yaml", 2, 14, "train.max_steps", {"'10x'", "an integer from 0"}},
      {"bad_choice.yaml", 1, 11, "strategy", {"'zero4'", "one of ddp, zero1, zero2, zero3, fsdp", "did you mean"}},
      {"below_min.yaml", 2, 15, "train.batch_size", {"'0'", "below the minimum 1"}},
      {"bad_bool.yaml", 2, 12, "data.shuffle", {"'maybe'", "true or false"}},
      {"bad_nproc.yaml", 2, 19, "launch.nproc_per_node", {"'many'", "a count, auto, cpu or gpu"}},
      {"duplicate.yaml", 3, 3, "train.max_steps", {"given twice (first at line 2)"}},
      {"group_as_value.yaml", 1, 8, "optim", {"group of settings"}},
      {"no_value.yaml", 2, 3, "train.work_dir", {"has no value"}},
      {"bad_indent.yaml", 3, 8, "", {"not valid YAML"}},
      {"embd_not_divisible.yaml", 4, 11, "model.n_embd", {"n_embd 128 is not divisible by model.n_head 6"}},
      {"offload_param_stage2.yaml", 3, 25, "zero.offload_param_device", {"only offloadable) with ZeRO stage 3", "'zero2'"}},
      {"global_batch.yaml", 4, 22, "train.global_batch_size", {"is 64 but", "is 32"}},
  };
  const auto& reg = job_registry();
  for (const auto& c : table) {
    DYNAMIC_SECTION(c.file) {
      ValidateReport rep = validate_file(reg, fixture(c.file));
      CHECK_FALSE(rep.ok());
      REQUIRE(rep.issues.size() >= 1);
      const Issue& i = rep.issues[0];
      INFO(i.text());
      CHECK(i.error);
      CHECK(i.where.line == c.line);
      CHECK(i.where.column == c.column);
      CHECK(i.key == c.key);
      for (const char* s : c.says) CHECK_THAT(i.text(), Catch::Contains(s));
      CHECK_THAT(i.text(), Catch::StartsWith(fixture(c.file) + ":" + std::to_string(c.line) + ":"));
    }
  }
}

TEST_CASE("validate reports every error, not just the first", "[config]") {
  ValidateReport rep = validate_file(job_registry(), fixture("many_errors.yaml"));
  REQUIRE(rep.issues.size() == 4);
  CHECK(rep.issues[0].where.line == 2);
  CHECK(rep.issues[0].key == "strategy");
  CHECK(rep.issues[1].where.line == 4);
  CHECK(rep.issues[1].key == "optim.lr");
  CHECK(rep.issues[2].where.line == 5);
  CHECK_THAT(rep.issues[2].text(), Catch::Contains("did you mean 'optim.beta1'") || Catch::Contains("Did you mean 'optim.beta1'"));
  CHECK(rep.issues[3].where.line == 7);
  CHECK_THAT(format_report(rep), Catch::Contains("invalid, 4 errors"));
}

TEST_CASE("valid files pass, warnings do not fail", "[config]") {
  ValidateReport rep = validate_text(job_registry(), "strategy: fsdp\nfsdp:\n  cpu_offload: true\nddp:\n  bucket_cap_mb: 10\n", "j.yaml");
  CHECK(rep.ok());
  REQUIRE(rep.issues.size() == 1);
  CHECK_FALSE(rep.issues[0].error);
  CHECK(rep.issues[0].where.line == 5);
  CHECK(validate_text(job_registry(), "", "empty.yaml").ok());
  CHECK_FALSE(validate_text(job_registry(), "- a\n- b\n", "list.yaml").ok());
  // Dotted keys at the top level are the same settings.
  ValidateReport dotted = validate_text(job_registry(), "train.max_steps: 5\n", "d.yaml");
  CHECK(dotted.ok());
  CHECK(dotted.settings == 1);
}

// Issue 45: the wizard wrote `data.name: auto` for a TorchScript model, which validate called valid
// and which failed in every rank; a model.path beside the default model trained gpt. validate runs
// the launch's model/data checks (cross_check), each pointed at the line of the setting.
TEST_CASE("validate refuses what the launch refuses: a model or data path nothing reads", "[config]") {
  const std::string here = std::string(MTRAIN_SOURCE_DIR) + "/CMakeLists.txt";
  ValidateReport auto_data =
      validate_text(job_registry(), "model:\n  name: torchscript\n  path: " + here + "\ndata:\n  name: auto\n", "j.yaml");
  CHECK_FALSE(auto_data.ok());
  REQUIRE(auto_data.issues.size() == 1);
  CHECK(auto_data.issues[0].where.line == 5);
  CHECK_THAT(auto_data.issues[0].text(), Catch::Contains("no task for your own model") && Catch::Contains("--data tensors"));
  ValidateReport gpt = validate_text(job_registry(), "model:\n  path: " + here + "\n", "j.yaml");
  REQUIRE(gpt.issues.size() == 1);
  CHECK(gpt.issues[0].where.line == 2);
  CHECK_THAT(gpt.issues[0].text(), Catch::Contains("model.name is gpt (the default)") && Catch::Contains("--model torchscript"));
  CHECK(validate_text(job_registry(),
                      "model:\n  name: torchscript\n  path: " + here + "\ndata:\n  name: tensors\n  path: " + here + "\n",
                      "j.yaml")
            .ok());
}

TEST_CASE("fsdp.wrap_module_types: a list of names from a YAML list or comma-separated text", "[config]") {
  const auto& reg = job_registry();
  YamlLayer flow = parse_yaml_layer(reg, "fsdp:\n  wrap_module_types: [Block, Linear]\n", "job.yaml",
                                    Source::JobFile);
  CHECK(flow.issues.empty());
  CHECK(flow.layer.values.at("fsdp.wrap_module_types") == json::array({"Block", "Linear"}));
  CHECK(validate_text(reg, "fsdp:\n  wrap_module_types: [Block, Linear]\n", "j.yaml").ok());
  YamlLayer block = parse_yaml_layer(reg, "fsdp:\n  wrap_module_types:\n    - Block\n    - head\n",
                                     "job.yaml", Source::JobFile);
  CHECK(block.layer.values.at("fsdp.wrap_module_types") == json::array({"Block", "head"}));
  // The same list as text (a flag, a variable, --set or a YAML scalar): the one list mechanism.
  for (const char* text : {"Block,head", " Block , head ,", "[Block, head]"}) {
    YamlLayer scalar = parse_yaml_layer(reg, std::string("fsdp:\n  wrap_module_types: \"") + text + "\"\n", "job.yaml",
                                        Source::JobFile);
    CHECK(scalar.layer.values.at("fsdp.wrap_module_types") == json::array({"Block", "head"}));
    CHECK(reg.parse_text(reg.require("fsdp.wrap_module_types"), text) == json::array({"Block", "head"}));
  }
  CHECK(reg.check_value(reg.require("fsdp.wrap_module_types"), "Block,head") == json::array({"Block", "head"}));
  YamlLayer nested = parse_yaml_layer(reg, "fsdp:\n  wrap_module_types: [[Block]]\n", "job.yaml",
                                      Source::JobFile);
  REQUIRE(nested.issues.size() == 1);
  CHECK_THAT(nested.issues[0].message, Catch::Contains("items of 'fsdp.wrap_module_types' must be plain values"));
  // Other text settings still refuse a list.
  YamlLayer other = parse_yaml_layer(reg, "train:\n  work_dir: [a, b]\n", "job.yaml", Source::JobFile);
  REQUIRE(other.issues.size() == 1);
  CHECK_THAT(other.issues[0].message, Catch::Contains("got a list"));
}
