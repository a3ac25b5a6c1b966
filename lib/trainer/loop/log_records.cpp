#include "lib/trainer/loop/log_records.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "lib/trainer/loop/console.hpp"

namespace mtrain::trainer {

LogRecord train_log(const TrainWindow& w) {
  LogRecord r;
  r.fields = {{"lr", fmt::format("{:.4e}", w.lr)},
              {"eta", format_eta(w.eta_s)},
              {"time", fmt::format("{:.4f}", w.time)},
              {"data_time", fmt::format("{:.4f}", w.data_time)},
              {"memory", std::to_string(w.memory_mb)},
              {"loss", fmt::format("{:.4f}", w.loss)}};
  if (w.grad_norm >= 0) r.fields.emplace_back("grad_norm", fmt::format("{:.4f}", w.grad_norm));
  if (w.fp16) r.fields.emplace_back("loss_scale", fmt::format("{:g}", w.loss_scale));
  r.record = {{"mode", "train"}, {"step", w.step}, {"epoch", w.epoch},         {"iter", w.iter},
              {"lr", w.lr},      {"loss", w.loss}, {"time", w.time}, {"data_time", w.data_time},
              {"memory", w.memory_mb}};
  if (w.grad_norm >= 0) r.record["grad_norm"] = w.grad_norm;
  if (w.fp16) {
    r.record["loss_scale"] = w.loss_scale;
    r.record["skipped_steps"] = w.skipped_steps;
  }
  return r;
}

LogRecord val_log(int64_t step, double loss_sum, double count, double correct, bool language_model,
                  double seconds) {
  const double n = std::max(1.0, count);
  const double loss = loss_sum / n;
  LogRecord r;
  r.record = {{"mode", "val"}, {"step", step}, {"loss", loss}};
  if (language_model) {
    r.record["perplexity"] = std::exp(loss);
    r.fields = {{"loss", fmt::format("{:.4f}", loss)}, {"perplexity", fmt::format("{:.4f}", std::exp(loss))}};
  } else {
    const double acc = 100.0 * correct / n;
    r.record["accuracy/top1"] = acc;
    r.fields = {{"accuracy/top1", fmt::format("{:.4f}", acc)}, {"loss", fmt::format("{:.4f}", loss)}};
  }
  r.fields.emplace_back("time", fmt::format("{:.4f}", seconds));
  return r;
}

}  // namespace mtrain::trainer
