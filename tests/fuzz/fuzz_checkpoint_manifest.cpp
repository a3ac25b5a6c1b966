// A checkpoint's manifest.json → Manifest (what resume reads from disk), and back: a manifest
// that reads writes JSON that reads to the same thing.
#include "fuzz_common.hpp"
#include "lib/core/input_limits.hpp"
#include "lib/trainer/checkpoint/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  nlohmann::json j;
  try {  // read_manifest's parse: input limits (mtrain::Error), syntax (reported by it)
    if (!fuzz::accepts([&] { j = parse_json_limited(fuzz::text(data, size), "manifest.json"); })) return 0;
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  fuzz::accepts([&] {
    auto m = trainer::manifest_from_json(j, "manifest.json");
    auto again = trainer::manifest_from_json(trainer::to_json(m), "round trip");
    FUZZ_CHECK(trainer::to_json(again) == trainer::to_json(m));
  });
  return 0;
}
