// A compiled model's parts as autograd nodes (lib/trainer/model/compiled_part_function.cpp): a
// unit's forward program hands its activations to its backward program, which computes no
// forward again; in training the epilogue's step program runs once, in the forward, and its
// gradients come back scaled by the incoming gradient. The programs here are stand-ins that count
// their calls (y = w * x; loss = sum(h * v)); the real ones run in
// tests/e2e/compiled/test_train_compiled.sh.
#include "lib/trainer/model/compiled_part_function.hpp"

#include <catch2/catch.hpp>

using namespace mtrain::trainer;

namespace {

struct Calls {
  int unit_forward = 0, unit_backward = 0, epilogue_forward = 0, epilogue_step = 0;
};

CompiledStage unit_stage(Calls& c) {
  const std::vector<ProgramArg> fwd = {{"blocks.0.w", at::kFloat, {3}}, {"hidden", at::kFloat, {2, 3}}};
  std::vector<ProgramArg> bwd = fwd;
  bwd.push_back({"saved[0]", at::kFloat, {2, 3}});
  bwd.push_back({"grad", at::kFloat, {2, 3}});
  auto forward = [&c](const std::vector<at::Tensor>& a) {
    ++c.unit_forward;
    return std::vector<at::Tensor>{a[1] * a[0], a[1] * 2};  // the activation: 2x
  };
  auto backward = [&c](const std::vector<at::Tensor>& a) {
    ++c.unit_backward;  // dL/dx = g w; dL/dw = sum(g x), x from the activation
    return std::vector<at::Tensor>{a[3] * a[0], (a[3] * a[2]).sum(0) / 2};
  };
  return {CompiledStage::Kind::Unit,
          "unit blocks.0",
          LoadedProgram(forward, "pkg", "programs/u_f.pt2", "the forward of the unit blocks.0", fwd, 2, at::kCPU),
          LoadedProgram(backward, "pkg", "programs/u_b.pt2", "the backward of the unit blocks.0", bwd, 2, at::kCPU),
          {1, 0}};
}

CompiledStage epilogue_stage(Calls& c) {
  const std::vector<ProgramArg> args = {{"head.v", at::kFloat, {3}}, {"hidden", at::kFloat, {2, 3}}};
  auto forward = [&c](const std::vector<at::Tensor>& a) {
    ++c.epilogue_forward;
    return std::vector<at::Tensor>{(a[1] * a[0]).sum()};
  };
  auto step = [&c](const std::vector<at::Tensor>& a) {
    ++c.epilogue_step;  // (loss, dL/dh = v, dL/dv = sum over rows of h)
    return std::vector<at::Tensor>{(a[1] * a[0]).sum(), a[0].expand({2, 3}).contiguous(), a[1].sum(0)};
  };
  return {CompiledStage::Kind::Epilogue,
          "epilogue",
          LoadedProgram(forward, "pkg", "programs/e_f.pt2", "the forward of the epilogue", args, 1, at::kCPU),
          LoadedProgram(step, "pkg", "programs/e_s.pt2", "the step of the epilogue", args, 3, at::kCPU),
          {2, 1}};
}

}  // namespace

TEST_CASE("compiled parts: activations pass from forward to backward, the epilogue steps once", "[compiled]") {
  Calls c;
  const CompiledStage unit = unit_stage(c), epilogue = epilogue_stage(c);
  const at::Tensor x = at::tensor({1.0F, -2.0F, 0.5F, 3.0F, 1.5F, -1.0F}).reshape({2, 3}).requires_grad_();
  const at::Tensor w = at::tensor({1.0F, 2.0F, 3.0F}).requires_grad_();
  const at::Tensor v = at::tensor({0.5F, -1.0F, 2.0F}).requires_grad_();

  const at::Tensor loss = run_compiled_part(epilogue, {v, run_compiled_part(unit, {w, x})});
  CHECK(c.unit_forward == 1);
  CHECK(c.epilogue_step == 1);
  CHECK(c.epilogue_forward == 0);  // training: the step program alone gives loss and gradients
  (loss * 3).backward();  // a loss scale of 3
  CHECK(c.unit_backward == 1);
  CHECK(c.unit_forward == 1);
  CHECK(c.epilogue_step == 1);

  // What autograd computes for the same function.
  const at::Tensor x2 = x.detach().clone().requires_grad_(), w2 = w.detach().clone().requires_grad_();
  const at::Tensor v2 = v.detach().clone().requires_grad_();
  const at::Tensor loss2 = (x2 * w2 * v2).sum();
  (loss2 * 3).backward();
  CHECK(loss.item<float>() == Approx(loss2.item<float>()));
  CHECK(x.grad().allclose(x2.grad()));
  CHECK(w.grad().allclose(w2.grad()));
  CHECK(v.grad().allclose(v2.grad()));

  // Evaluation: the forward programs only, nothing kept for a backward.
  {
    const at::NoGradGuard no_grad;
    const at::Tensor eval = run_compiled_part(epilogue, {v, run_compiled_part(unit, {w, x})});
    CHECK(eval.item<float>() == Approx(loss2.item<float>()));
  }
  CHECK(c.epilogue_forward == 1);
  CHECK(c.epilogue_step == 1);
  CHECK(c.unit_forward == 2);
}
