// exception_text.hpp: PyTorch's own words for a failure, without the C++ backtrace (issue 45).
#include <catch2/catch.hpp>

#include <c10/util/Exception.h>

#include "lib/trainer/comm/exception_text.hpp"

using namespace mtrain::trainer;

namespace {
// The interpreter's text for a wrong feature size, as LibTorch 2.x words it, with the C++
// stack trace it appends when TORCH_SHOW_CPP_STACKTRACES is on (the message repeated, then frames).
const std::string kInterpreter =
    "The following operation failed in the TorchScript interpreter.\n"
    "Traceback of TorchScript (most recent call last):\n"
    "  File \"code/__torch__.py\", line 12, in loss\n"
    "    _0 = (self).forward(x, )\n"
    "          ~~~~~~~~~~~~~ <--- HERE\n"
    "  File \"code/__torch__/torch/nn/modules/linear.py\", line 9, in forward\n"
    "    return torch.linear(input, self.weight, self.bias)\n"
    "           ~~~~~~~~~~~~ <--- HERE\n"
    "RuntimeError: addmm: mat1 and mat2 shapes cannot be multiplied (4x10 and 8x3)\n"
    "addmm: mat1 and mat2 shapes cannot be multiplied (4x10 and 8x3)\n"
    "Exception raised from meta at /pytorch/aten/src/ATen/native/LinearAlgebra.cpp:193 (most recent call first):\n"
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f in libc10.so)\n"
    "frame #16: <unknown function> + 0x61221 (0x55df in mtrain-worker)\n";
}  // namespace

TEST_CASE("a TorchScript failure: PyTorch's error, the source lines it points at, no C++ frames", "[trainer][comm]") {
  CHECK(without_backtrace(kInterpreter).find("frame #") == std::string::npos);
  const ScriptError e = split_script_error(without_backtrace(kInterpreter));
  // Before issue 45 the worker took the text's last line: "frame #16: <unknown function> …".
  CHECK(e.error == "RuntimeError: addmm: mat1 and mat2 shapes cannot be multiplied (4x10 and 8x3)");
  REQUIRE(e.traceback.size() == 7);
  CHECK(e.traceback[0] == "Traceback of TorchScript (most recent call last):");
  CHECK(e.traceback[1] == "  File \"code/__torch__.py\", line 12, in loss");
  CHECK(e.traceback[6] == "           ~~~~~~~~~~~~ <--- HERE");
  const std::string bt = backtrace_of(kInterpreter);
  CHECK(bt.rfind("Exception raised from meta", 0) == 0);
  CHECK_THAT(bt, Catch::Contains("frame #16"));
  CHECK(backtrace_of("plain message") == "");
}

TEST_CASE("of the serialized and the original traceback, the user's own source is kept", "[trainer][comm]") {
  const ScriptError e = split_script_error(
      "The following operation failed in the TorchScript interpreter.\n"
      "Traceback of TorchScript, serialized code (most recent call last):\n"
      "  File \"code/__torch__.py\", line 21, in loss\n"
      "    _1 = _0((self).forward(x, ), y, None, None, -100, None, \"mean\", 0., )\n"
      "\n"
      "Traceback of TorchScript, original code (most recent call last):\n"
      "  File \"make.py\", line 23, in loss\n"
      "      return F.cross_entropy(self.forward(x), y)\n"
      "                             ~~~~~~~~~~~~ <--- HERE\n"
      "RuntimeError: addmm: mat1 and mat2 shapes cannot be multiplied (4x10 and 8x8)\n");
  CHECK(e.error == "RuntimeError: addmm: mat1 and mat2 shapes cannot be multiplied (4x10 and 8x8)");
  REQUIRE(e.traceback.size() == 4);
  CHECK(e.traceback[0] == "Traceback of TorchScript, original code (most recent call last):");
  CHECK(e.traceback[1] == "  File \"make.py\", line 23, in loss");
}

TEST_CASE("an ATen error outside the interpreter is its message, whole", "[trainer][comm]") {
  try {
    TORCH_CHECK_INDEX(false, "Target ", 7, " is out of bounds.");
  } catch (const std::exception& ex) {
    const ScriptError e = script_error(ex);
    CHECK(e.error == "Target 7 is out of bounds.");
    CHECK(e.traceback.empty());
  }
  const ScriptError two = split_script_error("first line\nsecond line");
  CHECK(two.error == "first line\nsecond line");
}

TEST_CASE("a TorchScript traceback of any length is bounded", "[trainer][comm]") {
  std::string text = "The following operation failed in the TorchScript interpreter.\nTraceback of TorchScript (most recent call last):\n";
  for (int i = 0; i < 1000; ++i) text += "  File \"code/x.py\", line " + std::to_string(i) + ", in f\n";
  text += "RuntimeError: deep";
  const ScriptError e = split_script_error(text);
  CHECK(e.error == "RuntimeError: deep");
  CHECK(e.traceback.size() == kMaxTracebackLines + 1);
  CHECK_THAT(e.traceback[kMaxTracebackLines / 3], Catch::Contains("lines of the traceback left out"));
  CHECK_THAT(e.traceback.back(), Catch::Contains("line 999"));
}
