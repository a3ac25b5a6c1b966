#pragma once
// What the loop needs of a TorchScript model beyond TaskModel (torchscript.cpp; make_model
// builds it for model.name torchscript): writing model.scripted.pt.
#include "lib/trainer/model/model.hpp"

#include <torch/csrc/jit/api/module.h>

#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace mtrain::trainer {

bool is_scripted_model(const TaskModel& model);
// The classes of a TorchScript module's submodules, by plain name ("Block" for
// "__torch__.net.___torch_mangle_3.Block"), each with how many instances it has: what
// fsdp.wrap_module_types can name. The one list behind the refusal of a name that matches
// nothing, the FSDP one-unit note and `mtrain-worker model-check` (which `mtrain config init`
// asks, to offer them). A model that is not the user's TorchScript: empty.
std::map<std::string, int> submodule_classes(const torch::jit::Module& module);
std::map<std::string, int> submodule_classes(const TaskModel& model);
// Writes the user's TorchScript module (torch.jit.save format) with `weights` (state_dict names,
// full tensors) in place of its parameters; the model's live parameters are untouched.
void save_scripted_model(TaskModel& model,
                         const std::vector<std::pair<std::string, at::Tensor>>& weights,
                         std::ostream& out);

}  // namespace mtrain::trainer
