#pragma once
// One AOTInductor program of a compiled package (model.name compiled), loaded, with the shapes
// it was compiled for. LibTorch's loader checks nothing it is given: a smaller tensor is read
// past its end, a transposed one gives wrong numbers without an error (measured, issue 47 step
// 1). So every call checks each argument against the manifest first — defined, device type,
// dtype, shape, contiguous — and refuses in one paragraph naming the program and the argument;
// and it announces the arguments to the sharded engine (strategy/parameter_use.hpp) so that the
// units whose parameters the program reads are gathered and held for the call.
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "lib/trainer/comm/compat.hpp"

namespace mtrain::trainer {

struct ProgramArg {
  std::string name;  // the manifest's: a tensor-table name, "input", "target", "hidden", "grad"
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> shape;
};

class LoadedProgram {
 public:
  // `call`: the loaded program (compat::load_compiled_program); `file`: its path in the package;
  // `role`: "the forward of unit blocks.0", for messages; `outputs`: how many it returns;
  // `device`: the device type it was compiled for.
  LoadedProgram(compat::CompiledCall call, std::string package, std::string file, std::string role,
                std::vector<ProgramArg> args, size_t outputs, at::DeviceType device);

  std::vector<at::Tensor> operator()(const std::vector<at::Tensor>& args) const;

  const std::vector<ProgramArg>& args() const { return args_; }

 private:
  [[noreturn]] void refuse(const ProgramArg& a, const std::string& given) const;

  compat::CompiledCall call_;
  std::string package_, file_, role_;
  std::vector<ProgramArg> args_;
  size_t outputs_;
  at::DeviceType device_;
};

// "float32 [6x8x16]".
std::string describe_arg(const ProgramArg& a);

}  // namespace mtrain::trainer
