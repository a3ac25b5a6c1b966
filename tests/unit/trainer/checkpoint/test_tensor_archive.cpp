// tensor_archive: the archive's data.pkl is the pickle Python's torch.save writes for a state dict
// (an OrderedDict of _rebuild_tensor_v2 over ('storage', torch.<T>Storage, key, 'cpu', numel)),
// with no global PyTorch >= 2.6's weights-only torch.load refuses; the reader takes it and the
// format mtrain wrote before issue 44 (LibTorch's pickler, a typed dict under restore_type_tag).
#include <catch2/catch.hpp>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <fstream>

#include "helpers.hpp"
#include "lib/trainer/checkpoint/durable_file.hpp"
#include "lib/trainer/checkpoint/state_dict_pickle.hpp"
#include "lib/trainer/checkpoint/tensor_archive.hpp"
#include "lib/trainer/checkpoint/weights_file.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;

namespace {

std::vector<std::pair<std::string, at::Tensor>> sample() {
  return {{"w", at::randn({3, 4})},
          {"scalar", at::tensor(2.5, at::kDouble).reshape({})},
          {"ids", at::arange(70000, at::kLong)},  // numel past BININT2
          {"half", at::randn({5}).to(at::kHalf)},
          {"flags", at::tensor({1, 0, 1}).to(at::kBool)},
          {"bf", at::randn({2, 2}).to(at::kBFloat16)}};
}

// The tensors of a file through open_weights_file (what model.init and the tools read).
std::map<std::string, at::Tensor> read_back(const fs::path& p) {
  auto f = open_weights_file(p.string());
  std::map<std::string, at::Tensor> out;
  for (const auto& e : f->entries()) {
    out[e.name] = f->read(e.name, 0, c10::multiply_integers(e.shape)).view(e.shape);
  }
  return out;
}

void require_equal(const std::map<std::string, at::Tensor>& got,
                   const std::vector<std::pair<std::string, at::Tensor>>& want) {
  REQUIRE(got.size() == want.size());
  for (const auto& [name, t] : want) {
    INFO(name);
    REQUIRE(got.count(name) == 1);
    CHECK(got.at(name).scalar_type() == t.scalar_type());
    CHECK(got.at(name).sizes() == t.sizes());
    CHECK(got.at(name).equal(t));
  }
}

}  // namespace

TEST_CASE("the archive's data.pkl is torch.save's pickle of a state dict, nothing else",
          "[checkpoint][archive]") {
  const auto d = fresh_dir("archive_pickle");
  const auto ts = sample();
  const ArchiveWritten w = write_tensor_file((d / "a.pt").string(), ts);
  REQUIRE(w.keys.size() == ts.size());
  for (size_t i = 0; i < ts.size(); ++i) CHECK(w.keys[i] == std::to_string(i));
  ArchiveReader zip((d / "a.pt").string());
  const std::string pkl = zip.record("data.pkl");
  CHECK(zip.record("byteorder") == "little");
  // Only the globals PyTorch's weights-only unpickler allows: no LibTorch type tag.
  CHECK(pkl.find("restore_type_tag") == std::string::npos);
  CHECK(pkl.find("collections\nOrderedDict\n") != std::string::npos);
  CHECK(pkl.find("torch._utils\n_rebuild_tensor_v2\n") != std::string::npos);
  for (const char* cls : {"FloatStorage", "DoubleStorage", "LongStorage", "HalfStorage", "BoolStorage",
                          "BFloat16Storage"}) {
    CHECK(pkl.find(std::string("torch\n") + cls + "\n") != std::string::npos);
  }
  const PickledStateDict sd = parse_state_dict_pickle(pkl, "a.pt");
  REQUIRE(sd.tensors.size() == ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    CHECK(sd.tensors[i].name == ts[i].first);  // dict order = entry order
    CHECK(sd.tensors[i].storage_key == std::to_string(i));
    CHECK(sd.tensors[i].shape == ts[i].second.sizes().vec());
    CHECK(sd.tensors[i].storage_numel == ts[i].second.numel());
  }
  require_equal(read_back(d / "a.pt"), ts);
}

TEST_CASE("more than 1000 tensors: SETITEMS in batches, every one read back", "[checkpoint][archive]") {
  const auto d = fresh_dir("archive_many");
  std::vector<std::pair<std::string, at::Tensor>> ts;
  for (int i = 0; i < 2345; ++i) ts.emplace_back("t" + std::to_string(i), at::full({2}, static_cast<float>(i)));
  write_tensor_file((d / "m.pt").string(), ts);
  require_equal(read_back(d / "m.pt"), ts);
}

TEST_CASE("a model.pt in the format before issue 44 (LibTorch's pickler) is still read",
          "[checkpoint][archive]") {
  const auto d = fresh_dir("archive_old");
  const auto ts = sample();
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [n, t] : ts) dict.insert(n, t);
  // What write_tensor_archive wrote until then: torch::jit::Pickler's bytes, storages as records.
  std::vector<char> pkl;
  torch::jit::Pickler pickler([&](const char* b, size_t n) { pkl.insert(pkl.end(), b, b + n); });
  pickler.protocol();
  pickler.pushIValue(c10::IValue(dict));
  pickler.stop();
  REQUIRE(std::string(pkl.begin(), pkl.end()).find("restore_type_tag") != std::string::npos);
  {
    std::ofstream f(d / "old.pt", std::ios::binary);
    caffe2::serialize::PyTorchStreamWriter zip([&](const void* b, size_t n) -> size_t {
      f.write(static_cast<const char*>(b), static_cast<std::streamsize>(n));
      return n;
    });
    zip.writeRecord("data.pkl", pkl.data(), pkl.size());
    const auto& data = pickler.tensorData();
    for (size_t k = 0; k < data.size(); ++k) {
      const at::Tensor t = data[k].contiguous();
      zip.writeRecord("data/" + std::to_string(k), t.data_ptr(), t.nbytes());
    }
    zip.writeEndOfFile();
  }
  require_equal(read_back(d / "old.pt"), ts);
}
