#include "lib/trainer/model/recompute.hpp"

#include <ATen/Context.h>
#include <torch/autograd.h>

#include <mutex>
#include <utility>
#include <vector>

namespace mtrain::trainer {

namespace {

// What backward needs besides the saved input, carried through the autograd context.
struct Recompute : torch::CustomClassHolder {
  BlockFn fn;
  std::shared_ptr<torch::nn::Module> block;
  at::Tensor cpu_rng;
  at::Tensor device_rng;  // undefined unless the input lives on an accelerator
  at::Device device = at::kCPU;
};

// The RNG state of a device's default generator (dropout draws from it).
at::Tensor rng_state(const at::Device& d) {
  at::Generator g = d.is_cpu() ? at::detail::getDefaultCPUGenerator()
                               : at::globalContext().defaultGenerator(d);
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.get_state();
}

void set_rng_state(const at::Device& d, const at::Tensor& state) {
  at::Generator g = d.is_cpu() ? at::detail::getDefaultCPUGenerator()
                               : at::globalContext().defaultGenerator(d);
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_state(state);
}

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input,
                            c10::intrusive_ptr<Recompute> r) {
    r->cpu_rng = rng_state(at::kCPU);
    r->device = input.device();
    if (!r->device.is_cpu()) r->device_rng = rng_state(r->device);
    ctx->save_for_backward({input});
    at::Tensor out;
    {
      at::NoGradGuard no_grad;
      out = r->fn(input);
    }
    ctx->saved_data["recompute"] =
        c10::IValue::make_capsule(c10::static_intrusive_pointer_cast<torch::CustomClassHolder>(r));
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto r = c10::static_intrusive_pointer_cast<Recompute>(
        ctx->saved_data["recompute"].toCapsule());
    const at::Tensor input = ctx->get_saved_variables()[0];

    std::vector<std::pair<at::Tensor, at::Tensor>> buffers;
    if (r->block) {
      for (auto& b : r->block->buffers()) buffers.emplace_back(b, b.clone());
    }
    const at::Tensor cpu_now = rng_state(at::kCPU);
    const at::Tensor dev_now = r->device_rng.defined() ? rng_state(r->device) : at::Tensor();
    set_rng_state(at::kCPU, r->cpu_rng);
    if (r->device_rng.defined()) set_rng_state(r->device, r->device_rng);

    at::Tensor x = input.detach().requires_grad_(input.requires_grad());
    at::Tensor out;
    {
      at::AutoGradMode grad_on(true);
      out = r->fn(x);
    }
    set_rng_state(at::kCPU, cpu_now);
    if (dev_now.defined()) set_rng_state(r->device, dev_now);
    if (out.requires_grad()) {
      torch::autograd::backward({out}, {grads[0]});
    }
    {
      // After the inner backward: BatchNorm's backward reads the buffers it saved (their
      // version must not change before it runs).
      at::NoGradGuard no_grad;
      for (auto& [live, saved] : buffers) live.copy_(saved);
    }
    at::Tensor gx = x.requires_grad() && x.grad().defined() ? x.grad() : at::Tensor();
    return {gx, at::Tensor()};
  }
};

}  // namespace

at::Tensor run_checkpointed(BlockFn fn, const at::Tensor& input,
                            std::shared_ptr<torch::nn::Module> block) {
  auto r = c10::make_intrusive<Recompute>();
  r->fn = std::move(fn);
  r->block = std::move(block);
  return CheckpointFunction::apply(input, r);
}

}  // namespace mtrain::trainer
