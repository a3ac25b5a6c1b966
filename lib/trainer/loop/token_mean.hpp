#pragma once
// train.average_tokens_across_ranks: the loss of a step as the mean over every counted target
// (not -100) of its global batch — every rank's micro-batches — as Hugging Face's Trainer computes
// it, instead of DDP's mean over ranks of each rank's mean. Where ranks hold unequal numbers of
// targets (random masking, padding) the two differ. The model's loss stays a micro-batch mean; the
// trainer weighs it by its count: the strategies average the ranks' gradients, so micro-batch a of
// a rank gets world * count_a / global, and the sum over ranks and micro-batches, divided by world,
// is the gradient of (sum of every target's loss) / global.
#include <cstdint>
#include <vector>

namespace mtrain::trainer {

// `counts`: this rank's counted targets per micro-batch of the step; `global`: the sum of every
// rank's counts; `world`: ranks. The factor of each micro-batch's mean loss, 0 for a micro-batch
// with no counted target (its mean is 0/0: it adds no gradient) and for every one when `global` is 0.
std::vector<double> token_mean_scales(const std::vector<int64_t>& counts, int64_t global, int world);

}  // namespace mtrain::trainer
