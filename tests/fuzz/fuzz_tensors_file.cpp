// The `tensors` dataset's file (issue 29): a torch.save zip holding {"input": X, "target": Y} or
// (X, Y). Bytes starting "PK\3\4" go through ZipReader first; anything else is data.pkl itself.
// Both tensors must then be checked against their records (storage declared larger than the
// record: refused, never read).
#include <memory>

#include "fuzz_common.hpp"
#include "lib/trainer/checkpoint/state_dict_pickle.hpp"
#include "lib/core/zip_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const std::string bytes = fuzz::text(data, size);
  const bool zipped = size >= 4 && bytes.compare(0, 4, "PK\x03\x04") == 0;
  fuzz::accepts([&] {
    std::string pkl = bytes;
    std::unique_ptr<ZipReader> zip;
    if (zipped) {
      zip = std::make_unique<ZipReader>("t.pt", bytes);
      pkl = zip->read_all("data.pkl", size);
    }
    const auto pair = trainer::parse_tensor_pair_pickle(pkl, "t.pt", "write it with torch.save");
    for (const auto* t : {&pair.input, &pair.target}) {
      FUZZ_CHECK(t->shape.size() == t->stride.size());
      if (!zip) continue;
      const ZipRecord* r = zip->find("data/" + t->storage_key);
      if (r != nullptr) (void)trainer::pickled_tensor_problem(*t, r->size);
    }
  });
  return 0;
}
