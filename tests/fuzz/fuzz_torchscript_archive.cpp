// A TorchScript archive (--model-path), as the launcher and the worker read it before anything
// of it runs (issues 29, 40): the zip container (ZipReader in its TorchScript mode: stored and
// deflated records, each deflated one inflated within its declared size and kMaxTorchScriptRecord),
// then every record LibTorch could load as code. What the code calls is the trust check's
// (fuzz_torchscript_trust.cpp, which links LibTorch's parser).
#include "fuzz_common.hpp"
#include "lib/core/torchscript_archive.hpp"
#include "lib/core/zip_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const std::string bytes = fuzz::text(data, size);
  fuzz::accepts([&] {
    ZipReader zip("m.pt", bytes, kTorchScriptZip);
    for (const auto& r : zip.records()) FUZZ_CHECK(r.compressed_size <= size);
    const TorchScriptArchive a = scan_torchscript_archive(zip);
    FUZZ_CHECK(!a.prefix.empty());
    FUZZ_CHECK(!a.code.empty());
    for (const auto& r : a.code) FUZZ_CHECK(is_code_record(r.name) && r.text.size() <= kMaxTorchScriptRecord);
  });
  return 0;
}
