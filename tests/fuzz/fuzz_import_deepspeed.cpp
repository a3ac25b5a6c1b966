// DeepSpeed ds_config.json (with comments and "auto") → mtrain settings, and the YAML written.
#include "fuzz_common.hpp"
#include "lib/config/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const std::string in = fuzz::text(data, size);
  const auto& reg = config::job_registry();
  fuzz::accepts([&] {
    auto j = config::parse_json_with_comments(in, "ds_config.json");
    auto r = config::import_deepspeed(reg, j, "ds_config.json");
    for (const auto& [key, value] : r.values) {
      FUZZ_CHECK(reg.find(key) != nullptr);
      FUZZ_CHECK(!value.dump().empty());  // throws on text that is not UTF-8
    }
    FUZZ_CHECK(!config::import_yaml(reg, r).empty());
  });
  return 0;
}
