#pragma once
// What the loop logs for a window of training steps and for a validation pass: the fields of the
// console line (MMEngine's "Iter(train) [ 10/200]  lr: …  loss: …", numbers formatted) and the
// metrics.jsonl record (docs/architecture.md §5), from figures already averaged over ranks. Pure.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::trainer {

struct LogRecord {
  std::vector<std::pair<std::string, std::string>> fields;  // console: name, formatted value
  nlohmann::json record;                                     // metrics.jsonl
};

// The last log_interval steps (or fewer at the end of the run).
struct TrainWindow {
  int64_t step = 0;
  int64_t epoch = 0;  // 1-based
  int64_t iter = 0;   // the step within the epoch (by epochs) or the global step
  double lr = 0;
  double eta_s = 0;
  double time = 0;       // mean step time
  double data_time = 0;  // mean time waiting for data per step
  int64_t memory_mb = 0;
  double loss = 0;        // mean over the window's steps and all ranks
  double grad_norm = -1;  // < 0: not measured (no clipping)
  bool fp16 = false;      // adds the loss scale and the skipped steps
  double loss_scale = 1;
  int64_t skipped_steps = 0;
};
LogRecord train_log(const TrainWindow& w);

// A validation pass at `step`: sums over ranks of the loss, the samples and the correct top-1
// predictions. A language model reports perplexity, a classifier top-1 accuracy in percent.
LogRecord val_log(int64_t step, double loss_sum, double count, double correct, bool language_model,
                  double seconds);

}  // namespace mtrain::trainer
