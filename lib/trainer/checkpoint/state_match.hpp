#pragma once
// Does a checkpoint hold exactly the state this job's model and optimiser have? Resume used to
// read the tensors the model asked for and ignore the rest, so a 4-layer checkpoint resumed into
// a 2-layer model silently dropped two trained blocks, and an AdamW checkpoint resumed into SGD
// silently dropped the moments. A pure comparison of the manifest with the job's expectation,
// made on every rank before any tensor is read (every rank sees the same manifest, so all
// refuse together).
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>

#include "lib/trainer/checkpoint/manifest.hpp"

namespace mtrain::trainer {

struct ExpectedTensor {
  std::string name;  // "model/<param>", "optim/<state>/<param>"
  std::vector<int64_t> shape;
};

// What a job saves for these trainable parameters (name, shape) and optimiser state names.
std::vector<ExpectedTensor> expected_state(
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& params,
    const std::vector<std::string>& optimizer_states);
// The same for a model: its trainable parameters, each once (tied weights are one tensor), in
// named_parameters() order — what every strategy saves.
std::vector<ExpectedTensor> expected_state(const torch::nn::Module& model,
                                           const std::vector<std::string>& optimizer_states);

// Throws mtrain::Error (exit 2) when the checkpoint's model/ and optim/<state>/ tensors differ
// from `expected`: a table of the tensors only in the checkpoint, only in the job, or of another
// shape (at most 20 rows, then "… and N more"), and, when the optimiser differs (recorded name,
// or its state tensors), which optimiser each has. optim/step and precision/ are not compared.
void require_matching_state(const Manifest& m, const std::string& dir,
                            const std::vector<ExpectedTensor>& expected, const std::string& optimizer,
                            const std::vector<std::string>& optimizer_states);

}  // namespace mtrain::trainer
