#include <catch2/catch.hpp>
#include <fstream>

#include "error_text.hpp"
#include "lib/core/torchscript_archive.hpp"
#include "temp_dir.hpp"
#include "zip_bytes.hpp"

using namespace mtrain;
using mtrain::testing::error_text;
using mtrain::testing::TempDir;
using mtrain::testing::zip_bytes;

namespace {
std::vector<std::string> names(const std::vector<CodeRecord>& code) {
  std::vector<std::string> out;
  for (const auto& r : code) out.push_back(r.name);
  return out;
}
}  // namespace

TEST_CASE("read_torchscript_archive: version, the 2.x byteorder record and the operators", "[torchscript_archive]") {
  TempDir d;
  const std::string p = d.str() + "/net.pt";
  std::ofstream(p, std::ios::binary) << zip_bytes({{"net/data.pkl", "x"},
                                                    {"net/code/__torch__.py", "y = torch.linear(x, w)\n"},
                                                    {"net/code/__torch__.py.debug_pkl", "torch.not_code(1)"},
                                                    {"net/code/__torch__/m.py", "z = torch.scaled_dot_product_attention(q, k, v)\nw = torch.linear(a, b)\n"},
                                                    {"net/version", "3\n"},
                                                    {"net/byteorder", "little"}});
  const auto a = read_torchscript_archive(p);
  CHECK(a.prefix == "net");
  CHECK(a.format_version == 3);
  CHECK(a.has_byteorder);
  CHECK(a.saved_by() == "PyTorch 2.x (file format 3, with the byteorder record 2.x writes)");
  CHECK(names(a.code) == std::vector<std::string>{"code/__torch__.py", "code/__torch__/m.py"});
  CHECK(a.code[0].text == "y = torch.linear(x, w)\n");
}

TEST_CASE("read_torchscript_archive: a torch.save file is named as such", "[torchscript_archive]") {
  TempDir d;
  const std::string p = d.str() + "/weights.pt";
  std::ofstream(p, std::ios::binary) << zip_bytes({{"archive/data.pkl", "x"}, {"archive/data/0", "1234"}, {"archive/version", "3"}});
  CHECK_THAT(error_text([&] { read_torchscript_archive(p); }),
             Catch::Contains("weights.pt") && Catch::Contains("not a TorchScript archive") && Catch::Contains("--init"));
}

TEST_CASE("read_torchscript_archive: a real PyTorch 2.x archive, its code deflated", "[torchscript_archive]") {
  // torch.jit.save(torch.jit.script(Net())) by PyTorch 2.15, Net = relu(Linear(2, 2)(x)): its
  // code/ records are deflated (method 8), the rest stored; each inflates to its declared size
  // and CRC, or the read throws.
  const auto a = read_torchscript_archive(MTRAIN_SOURCE_DIR "/tests/data/torchscript/scripted_linear_2x.pt");
  CHECK(a.prefix == "scripted_linear_2x");
  CHECK(a.format_version >= 3);
  CHECK(a.has_byteorder);
  // code/__torch__.py (Net) and code/__torch__/torch/nn/modules/linear.py (Linear).
  REQUIRE(a.code.size() == 2);
  CHECK((a.code[0].text + a.code[1].text).find("torch.linear(") != std::string::npos);
}

TEST_CASE("read_torchscript_archive: code records are found as LibTorch finds them, whatever their case", "[torchscript_archive]") {
  // LibTorch's reader (miniz, no case-sensitive flag) serves `CODE/__torch__.PY` when asked for
  // `code/__torch__.py`: the old scan read only `code/*.py` and let such code run unread (issue 40).
  TempDir d;
  const std::string p = d.str() + "/net.pt";
  std::ofstream(p, std::ios::binary) << zip_bytes({{"net/data.pkl", "x"},
                                                    {"net/CODE/__torch__.PY", "class A(Module):\n  pass\n"},
                                                    {"net/code/__torch__/b.Py", "def f(x: int) -> int:\n  return x\n"}});
  CHECK(names(read_torchscript_archive(p).code) == std::vector<std::string>{"CODE/__torch__.PY", "code/__torch__/b.Py"});
  CHECK(is_code_record("Code/x.pY"));
  CHECK_FALSE(is_code_record("code/x.py.debug_pkl"));
  CHECK_FALSE(is_code_record("constants.pkl"));
}

TEST_CASE("read_torchscript_archive: two records that differ only in case are refused", "[torchscript_archive]") {
  TempDir d;
  const std::string p = d.str() + "/net.pt";
  std::ofstream(p, std::ios::binary) << zip_bytes({{"net/data.pkl", "x"},
                                                    {"net/code/__torch__.py", "class A(Module):\n  pass\n"},
                                                    {"net/code/__torch__.PY", "class A(Module):\n  pass\n"}});
  CHECK_THAT(error_text([&] { read_torchscript_archive(p); }),
             Catch::Contains("differ only in case") && Catch::Contains("code/__torch__.PY"));
  std::ofstream(p, std::ios::binary) << zip_bytes({{"net/data.pkl", "x"}, {"net/DATA.PKL", "y"}, {"net/code/a.py", ""}});
  CHECK_THAT(error_text([&] { read_torchscript_archive(p); }), Catch::Contains("differ only in case"));
}
