#include <catch2/catch.hpp>
#include <fstream>

#include "error_text.hpp"
#include "mtrain/core/torchscript_archive.hpp"
#include "temp_dir.hpp"
#include "zip_bytes.hpp"

using namespace mtrain;
using mtrain::testing::error_text;
using mtrain::testing::TempDir;
using mtrain::testing::zip_bytes;

namespace {
std::vector<std::string> names(const std::vector<OperatorUse>& uses) {
  std::vector<std::string> out;
  for (const auto& u : uses) out.push_back(u.name);
  return out;
}
}  // namespace

TEST_CASE("operators_in_code: aten calls, other namespaces, in order of first use", "[torchscript_archive]") {
  // As PyTorch 2.x prints a scripted attention block.
  const std::string code =
      "class A(Module):\n"
      "  def forward(s: __torch__.A,\n"
      "    x: Tensor) -> Tensor:\n"
      "    q, k, v, = torch.split((s.l).forward(x, ), 8, 2)\n"
      "    y = torch.scaled_dot_product_attention(q, k, v, None, 0., True)\n"
      "    _0 = __torch__.torch.nn.functional.linear(y, s.w, )\n"
      "    d = ops.prim.device(y)\n"
      "    z = torch.ops.mylib.fused(y)\n"
      "    t = torch.float32  # torch.not_a_call(x)\n"
      "    torch.warn(\"torch.in_a_string(x)\")\n"
      "    return torch.split(y, 2)\n";
  const auto uses = operators_in_code(code, "code/__torch__.py");
  CHECK(names(uses) == std::vector<std::string>{"aten::split", "aten::scaled_dot_product_attention", "prim::device",
                                                "mylib::fused", "aten::warn"});
  CHECK(uses[1].where == "code/__torch__.py:5");
  CHECK(operators_in_code("", "x").empty());
  CHECK(operators_in_code("torch.", "x").empty());       // cut short: no crash
  CHECK(operators_in_code("ops.aten.", "x").empty());
  CHECK(operators_in_code("\"unterminated", "x").empty());
}

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
  CHECK(names(a.operators) == std::vector<std::string>{"aten::linear", "aten::scaled_dot_product_attention"});
  CHECK(a.operators[1].where == "code/__torch__/m.py:1");
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
  CHECK(names(a.operators) == std::vector<std::string>{"aten::relu", "aten::linear"});
  CHECK(a.setstates.empty());
}
