#include "lib/trainer/model/loaded_program.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/trainer/comm/dtype_names.hpp"
#include "lib/trainer/comm/exception_text.hpp"
#include "lib/trainer/model/models.hpp"
#include "lib/trainer/strategy/parameter_use.hpp"

namespace mtrain::trainer {

std::string describe_arg(const ProgramArg& a) {
  std::vector<std::string> dims;
  for (int64_t d : a.shape) dims.push_back(std::to_string(d));
  return fmt::format("{} [{}]", dtype_name(a.dtype), str::join(dims, "x"));
}

LoadedProgram::LoadedProgram(compat::CompiledCall call, std::string package, std::string file, std::string role,
                             std::vector<ProgramArg> args, size_t outputs, at::DeviceType device)
    : call_(std::move(call)), package_(std::move(package)), file_(std::move(file)), role_(std::move(role)),
      args_(std::move(args)), outputs_(outputs), device_(device) {}

void LoadedProgram::refuse(const ProgramArg& a, const std::string& given) const {
  throw UsageError(
      fmt::format("the compiled program {} of the package '{}' ({}) takes '{}' as {}, contiguous; "
                  "it was given {}",
                  file_, package_, role_, a.name, describe_arg(a), given),
      "a package runs only the shapes it was exported with: export it again with --example NAME=DTYPE:SHAPE "
      "for this job's per-rank micro-batch (train.batch_size rows per rank), or set train.batch_size to "
      "the example's rows; a compiled package trains in fp32 (train.precision fp32)")
      .at("model.path");
}

std::vector<at::Tensor> LoadedProgram::operator()(const std::vector<at::Tensor>& args) const {
  if (args.size() != args_.size())
    throw RuntimeFailure(fmt::format("the compiled program {} ({}) takes {} arguments, the trainer passed {}", file_,
                                     role_, args_.size(), args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    const at::Tensor& t = args[i];
    const ProgramArg& a = args_[i];
    if (!t.defined()) refuse(a, "no tensor");
    const bool same = t.scalar_type() == a.dtype && t.sizes().vec() == a.shape && t.is_contiguous();
    if (!same)
      refuse(a, fmt::format("{} {}{}", dtype_name(t.scalar_type()), shape_of(t),
                            t.is_contiguous() ? "" : " with other strides (not contiguous)"));
    if (t.device().type() != device_ || t.device() != args[0].device())
      refuse(a, fmt::format("a tensor on {} (the package was compiled for {}{})", t.device().str(),
                            c10::DeviceTypeName(device_, /*lower_case=*/true),
                            i > 0 ? fmt::format(", its first argument is on {}", args[0].device().str()) : ""));
  }
  // Held until the program returns: the engine may not release a unit it reads meanwhile.
  const std::shared_ptr<void> in_use = use_parameters(args);
  try {
    std::vector<at::Tensor> out = call_(args);
    if (out.size() != outputs_)
      throw RuntimeFailure(
          fmt::format("the compiled program {} of the package '{}' ({}) returned {} tensors, the manifest "
                      "says {}",
                      file_, package_, role_, out.size(), outputs_),
          "export the package again with this mtrain's python/mtrain_export")
          .at("model.path");
    return out;
  } catch (const mtrain::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw RuntimeFailure(fmt::format("the compiled program {} of the package '{}' ({}) failed: {}", file_, package_,
                                     role_, exception_text(e)),
                         "a package runs only under the PyTorch release and on the device type it was compiled for "
                         "(its manifest.json names both); export it again for this worker")
        .at("model.path");
  }
}

}  // namespace mtrain::trainer
