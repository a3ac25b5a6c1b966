// A checkpoint's manifest.json → Manifest (what resume reads from disk), and back: a manifest
// that reads writes JSON that reads to the same thing.
#include "fuzz_common.hpp"
#include "mtrain/trainer/checkpoint/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  auto j = nlohmann::json::parse(fuzz::text(data, size), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;  // read_manifest reports unparsable JSON itself
  fuzz::accepts([&] {
    auto m = trainer::manifest_from_json(j, "manifest.json");
    auto again = trainer::manifest_from_json(trainer::to_json(m), "round trip");
    FUZZ_CHECK(trainer::to_json(again) == trainer::to_json(m));
  });
  return 0;
}
