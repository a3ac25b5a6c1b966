#pragma once
// What the loop does with the model outside training steps, as free functions of the strategy,
// the model and the communicator: streaming the trained weights to a file and agreeing on
// buffers. The collective-counter arithmetic is step_figures.hpp's.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include "lib/trainer/checkpoint/durable_file.hpp"
#include "lib/trainer/checkpoint/hf_weights.hpp"
#include "lib/trainer/checkpoint/tensor_archive.hpp"
#include "lib/trainer/comm/communicator.hpp"
#include "lib/trainer/model/model.hpp"
#include "lib/trainer/strategy/strategy.hpp"

namespace mtrain::trainer {

using WeightsWriter = std::function<void(DurableWriter&, const std::vector<ArchiveEntry>&)>;
struct WeightsFile {
  std::string path;
  WeightsWriter write;
};

// Streams the strategy's exported parameters into every file on rank 0 (model.pt and
// model.safetensors) in one pass: each unit is gathered once, written to the first file on this
// thread and handed to each other file's writer on a thread of its own, one tensor at a time, so
// no rank ever holds the whole model. Collective: every rank runs every producer in order, also
// when rank 0's write fails part-way, so that the others are not left waiting in an all-gather.
// keep (rank 0): receives a CPU copy of every tensor written.
void write_streamed_weights(Strategy& strategy, Communicator& comm, const std::vector<WeightsFile>& files,
                            std::vector<std::pair<std::string, at::Tensor>>* keep = nullptr);

// The run's model files in `work_dir`: model.pt and model.safetensors (its metadata: format,
// producer, step, strategy and the job's settings as JSON), streamed as above; a TorchScript
// model also gets model.scripted.pt (the user's module with these weights). A torch.jit.save
// archive cannot be streamed, so while model.pt is written rank 0 keeps a CPU copy of each
// exported tensor for it (one full model, on rank 0 only, at the end of the run). Collective.
// With `hf` (model.hf_config), also <work_dir>/hf/: model.safetensors under the Hugging Face
// model's own names (hf_weights.hpp; tied names found from the model's shared tensors) and
// config.json, streamed in the same pass.
void export_model(Strategy& strategy, Communicator& comm, TaskModel& model, const std::string& work_dir,
                  int64_t step, const std::string& job_settings, const HfExport* hf = nullptr);

// Replaces every rank's floating-point buffers (BatchNorm running statistics) by their average
// over ranks. Collective; nothing to do at world 1.
void average_buffers(torch::nn::Module& model, Communicator& comm);

}  // namespace mtrain::trainer
