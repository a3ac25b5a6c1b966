#pragma once
// Datasets of the bundled trainer: index-addressable, immutable after construction, so every
// rank builds its own copy and the distributed sampler alone decides who reads what.
//
//  synthetic  generated on the fly from (seed, index) by a counter-based RNG, so a sample never
//             depends on which rank or in which order it is read:
//               mlp     input_dim Gaussian features labelled by a fixed random linear teacher
//               resnet  3x32x32 images: a class prototype (smooth random pattern), randomly
//                       shifted, plus noise
//               gpt     token windows drawn from a fixed random sparse Markov chain
//             Train = num_samples samples; Val = ceil(num_samples * val_fraction) further ones.
//  text       byte-level tokens (vocab 256) of data.path, or of the corpus compiled into the
//             binary when data.path is empty. The tail val_fraction of the bytes is Val. Samples
//             are non-overlapping windows: sample i covers bytes [i*T, i*T + T] (T = block_size),
//             input = the first T, target = the last T.
//  cifar10    the binary batches in folder data.path: data_batch_1..5.bin (Train) and
//             test_batch.bin (Val), records of 1 label byte + 3072 pixel bytes (CHW, RGB);
//             normalised by the usual per-channel mean/std. val_fraction is not used.
//  tokens     token ids of a nanoGPT (raw uint16) or llm.c (headed uint16/uint32) file
//             data.path, memory-mapped; windows as for text, ids below model.vocab_size. Val is
//             data.val_path when set, else the tail val_fraction of the tokens.
//  tensors    torch.save({"input": X, "target": Y}) in data.path: sample i = (X[i], Y[i]), any
//             dtype and shape. Val = data.val_path in the same format, else the tail
//             val_fraction of the rows.
#include "lib/trainer/model/model.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mtrain::trainer {

enum class Split { Train, Val };

// Mirrors the job's "data" section (TrainJob fills it); name is already resolved ("auto" → text
// for gpt, synthetic otherwise: config::effective_data_name).
struct DataSpec {
  config::DataName name = config::DataName::Synthetic;  // never Auto
  std::string path;                // text: a file ("" = embedded corpus); cifar10: a folder;
                                   // tokens / tensors: a file
  std::string val_path;            // tokens / tensors: the validation file ("" = the tail val_fraction)
  int64_t num_samples = 4096;      // synthetic
  double val_fraction = 0.1;       // synthetic, text, tokens, tensors
  bool shuffle = true;             // read by the sampler's caller
  bool drop_last = true;           // read by the sampler's caller
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Stacked samples in the given order, CPU tensors. Throws mtrain::Error for an index out of
  // [0, size()).
  virtual Batch batch(const std::vector<int64_t>& indices) const = 0;
};

// Throws mtrain::Error when the data does not fit the model (text for a non-LM, input_dim vs
// cifar10, …) or a file is missing/short, naming the file and what was expected.
std::unique_ptr<Dataset> make_dataset(const DataSpec& d, const ModelSpec& m, Split split,
                                      uint64_t seed);

// The corpus compiled into the binary (original English prose), used by text without data.path.
const std::string& embedded_corpus();

}  // namespace mtrain::trainer
