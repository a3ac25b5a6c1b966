// The argument check of a compiled program (lib/trainer/model/loaded_program.cpp). AOTInductor's
// loader checks nothing (issue 47 step 1: a smaller tensor was read past its end, a transposed one
// gave wrong numbers), so a wrong argument must be refused before the program is called. The
// program here is a stand-in that counts its calls; the real programs run in
// tests/e2e/compiled/test_train_compiled.sh.
#include "lib/core/error.hpp"
#include "lib/trainer/model/loaded_program.hpp"

#include <catch2/catch.hpp>

using namespace mtrain::trainer;

namespace {

struct Fixture {
  int calls = 0;
  size_t returns = 1;
  LoadedProgram program() {
    auto call = [this](const std::vector<at::Tensor>& args) {
      ++calls;
      return std::vector<at::Tensor>(returns, args.back() * 2);
    };
    return LoadedProgram(call, "pkg", "programs/unit0_Block_forward.pt2", "the forward of the unit blocks.0",
                         {{"blocks.0.w", at::kFloat, {4}}, {"hidden", at::kFloat, {2, 3}}}, 1, at::kCPU);
  }
};

std::string refusal(const LoadedProgram& p, const std::vector<at::Tensor>& args) {
  try {
    p(args);
  } catch (const mtrain::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("compiled program: arguments as compiled run, any other is refused before the call", "[compiled]") {
  Fixture f;
  const LoadedProgram p = f.program();
  const at::Tensor w = at::ones({4}), h = at::ones({2, 3});
  CHECK(p({w, h}).at(0).equal(h * 2));
  CHECK(f.calls == 1);

  // A smaller batch: the program would read past it.
  CHECK_THAT(refusal(p, {w, at::ones({1, 3})}),
             Catch::Contains("programs/unit0_Block_forward.pt2 of the package 'pkg' (the forward of the unit "
                             "blocks.0) takes 'hidden' as float32 [2x3], contiguous; it was given float32 [1x3]"));
  // Same shape, other strides: wrong numbers without an error.
  CHECK_THAT(refusal(p, {w, at::ones({3, 2}).t()}), Catch::Contains("with other strides (not contiguous)"));
  CHECK_THAT(refusal(p, {w.to(at::kDouble), h}), Catch::Contains("takes 'blocks.0.w' as float32 [4]"));
  CHECK_THAT(refusal(p, {w, at::Tensor()}), Catch::Contains("it was given no tensor"));
  CHECK_THROWS_AS(p({w}), mtrain::Error);
  CHECK(f.calls == 1);

  // A view into a flat buffer (how the sharded strategies hold parameters) is contiguous: accepted.
  const at::Tensor flat = at::ones({7});
  CHECK_NOTHROW(p({flat.narrow(0, 3, 4), h}));
  CHECK(f.calls == 2);
}

TEST_CASE("compiled program: a wrong number of results or a failure is one paragraph naming the program",
          "[compiled]") {
  Fixture f;
  f.returns = 2;
  CHECK_THAT(refusal(f.program(), {at::ones({4}), at::ones({2, 3})}),
             Catch::Contains("returned 2 tensors, the manifest says 1"));
  const LoadedProgram failing(
      [](const std::vector<at::Tensor>&) -> std::vector<at::Tensor> { TORCH_CHECK(false, "kernel failed"); }, "pkg",
      "programs/epilogue_step.pt2", "the step of the epilogue", {{"hidden", at::kFloat, {2}}}, 3, at::kCPU);
  const std::string msg = refusal(failing, {at::ones({2})});
  CHECK_THAT(msg, Catch::Contains("programs/epilogue_step.pt2 of the package 'pkg' (the step of the epilogue) failed: "
                                  "kernel failed"));
  CHECK_THAT(msg, !Catch::Contains("frame #"));
}
