// A torch.save state dict (issue 29): the zip container (ZipReader over the bytes: end record,
// zip64, central directory, local headers, methods) and the pickle in data.pkl, then every
// tensor against its record — what model.init does before reading a weight. Also the raw bytes
// as a pickle, so the fuzzer reaches the opcode reader without building a zip first.
#include "fuzz_common.hpp"
#include "lib/trainer/checkpoint/state_dict_pickle.hpp"
#include "lib/core/zip_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const std::string bytes = fuzz::text(data, size);
  if (size >= 4 && bytes.compare(0, 4, "PK\x03\x04") == 0) {
    fuzz::accepts([&] {
      ZipReader zip("x.pt", bytes);
      for (const auto& r : zip.records()) FUZZ_CHECK(r.compressed_size <= size && (r.method != 0 || r.size == r.compressed_size));
      const std::string pkl = zip.read_all("data.pkl", size);
      const auto sd = trainer::parse_state_dict_pickle(pkl, "x.pt");
      for (const auto& t : sd.tensors) {
        const ZipRecord* r = zip.find("data/" + t.storage_key);
        if (r == nullptr || r->method != 0) continue;  // compressed tensor data: refused by stored()
        if (trainer::pickled_tensor_problem(t, r->size).empty() && r->size > 0) {
          char b[1];
          zip.read_range("data/" + t.storage_key, r->size - 1, 1, b);  // inside: must not throw
        }
      }
    });
    return 0;
  }
  fuzz::accepts([&] {
    const auto sd = trainer::parse_state_dict_pickle(bytes, "data.pkl");
    for (const auto& t : sd.tensors) {
      FUZZ_CHECK(t.shape.size() == t.stride.size() && t.shape.size() <= 64);
      FUZZ_CHECK(t.storage_numel >= 0 && t.item_size > 0);
      (void)trainer::pickled_tensor_problem(t, static_cast<uint64_t>(size));
    }
  });
  return 0;
}
