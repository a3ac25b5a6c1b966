#pragma once
// From the probe's measured points (`mtrain-worker estimate-probe`: resident high-water mark of
// one forward+backward above what was resident before it, per batch size) to the activation bytes
// of the requested job. Pure; docs/estimate.md "Activations are measured".
//
// Two ways the points are taken:
//  * the model itself, at batch 1, 2, 4 and 8: bytes(B) = fixed + B · per_sample, the slope and
//    the intercept fitted to the points by least squares;
//  * a model too large to run here (a gpt of more than kProbeParamLimit parameters): a slice of the
//    same width — same n_embd, n_head, block_size and vocabulary — with 1 and 2 blocks, at batch 1.
//    The difference of the two is one block's bytes per sample, the rest (embeddings, the final
//    norm, the logits and the loss) is what the 1-block slice holds besides its block; both scale
//    linearly with the batch (each sample is its own sequence) and the blocks with their count.
#include <cstdint>

#include <nlohmann/json.hpp>

namespace mtrain::estimate {

// Above this many parameters a gpt is probed on a slice (estimate_job.cpp): building and running
// the whole model on the CPU that runs `mtrain estimate` would take minutes per pass and more
// memory than the host has.
constexpr int64_t kProbeParamLimit = 150000000;

struct LinearBytes {
  double fixed = 0;       // bytes at any batch
  double per_sample = 0;  // bytes per sample of the micro-batch
  double at(double batch) const { return fixed + batch * per_sample; }
};

// points: [{"batch": b, "peak_above_bytes": x}, …] with at least two batches (else all zero);
// least squares, slope and intercept clamped at 0.
LinearBytes fit_points(const nlohmann::json& points);

// A slice's points at batch 1 with one and with two blocks, scaled to `blocks` blocks:
// per sample = rest + blocks · per_block (per_block = two − one, rest = one − per_block).
// With `recomputed` blocks (activation checkpointing) only one block's inner activations live at
// once beside every block's saved input; the saved input is what the 2-block slice holds beyond
// the 1-block slice when both recompute, so per sample = one + (blocks − 1) · (two − one).
LinearBytes scale_slice(double one_block, double two_blocks, int64_t blocks);

}  // namespace mtrain::estimate
