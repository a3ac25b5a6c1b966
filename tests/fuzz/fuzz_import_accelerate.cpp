// accelerate config.yaml → mtrain settings. deepspeed_config_file is resolved against a folder
// that does not exist, so relative references fail as a missing file would.
#include "fuzz_common.hpp"
#include "lib/config/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const std::string in = fuzz::text(data, size);
  const auto& reg = config::job_registry();
  fuzz::accepts([&] {
    auto doc = config::yaml_to_json(in, "accelerate.yaml");
    auto r = config::import_accelerate(reg, doc, "accelerate.yaml", "/nonexistent-mtrain-fuzz");
    for (const auto& [key, value] : r.values) {
      FUZZ_CHECK(reg.find(key) != nullptr);
      FUZZ_CHECK(!value.dump().empty());  // throws on text that is not UTF-8
    }
    FUZZ_CHECK(!config::import_yaml(reg, r).empty());
  });
  return 0;
}
