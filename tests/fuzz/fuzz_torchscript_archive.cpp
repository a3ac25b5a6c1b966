// A TorchScript archive (--model-path), as the launcher and the worker scan it before anything
// of it runs (issue 29): the zip container (ZipReader in its TorchScript mode: stored and deflated
// records, each deflated one inflated within its declared size and kMaxTorchScriptRecord), then
// the code/ records read for their operators and __setstate__ methods.
#include "fuzz_common.hpp"
#include "mtrain/core/torchscript_archive.hpp"
#include "mtrain/core/zip_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const std::string bytes = fuzz::text(data, size);
  fuzz::accepts([&] {
    ZipReader zip("m.pt", bytes, kTorchScriptZip);
    for (const auto& r : zip.records()) FUZZ_CHECK(r.compressed_size <= size);
    const TorchScriptArchive a = scan_torchscript_archive(zip);
    FUZZ_CHECK(!a.prefix.empty());
    for (const auto& op : a.operators) FUZZ_CHECK(op.name.find("::") != std::string::npos);
    for (const auto& m : a.setstates) FUZZ_CHECK(m.where.rfind("code/", 0) == 0);
  });
  // The code scanners alone, on the raw bytes as if they were one code file.
  (void)operators_in_code(bytes, "code/x.py");
  (void)setstate_methods(bytes, "code/x.py");
  return 0;
}
