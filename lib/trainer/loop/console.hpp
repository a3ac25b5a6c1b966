#pragma once
// Rank 0's console in the MMEngine style:
//   Iter(train) [ 10/200]  lr: 1.0000e-03  eta: 0:00:13  time: 0.0673  data_time: 0.0011  memory: 212  loss: 3.1887
//   Epoch(train) [1][ 10/196]  …            (training by epochs)
//   Iter(val) [200/200]  loss: 2.1034  perplexity: 8.1925   /   accuracy/top1: 91.2500
// plus a one-line progress bar, redrawn in place, only when stdout is a terminal.
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace mtrain::trainer {

struct Position {
  bool by_epochs = false;
  int64_t epoch = 0;   // 1-based, by epochs
  int64_t iter = 0;    // 1-based step within the epoch, or global step
  int64_t total = 0;   // steps per epoch, or max steps
};

std::string format_eta(double seconds);  // H:MM:SS
std::string position_prefix(const std::string& mode, const Position& p);  // "Iter(train) [ 10/200]"
// "  name: value" pairs appended in order; numbers already formatted.
std::string format_line(const std::string& prefix,
                        const std::vector<std::pair<std::string, std::string>>& fields);

class Console {
 public:
  Console(std::ostream& out, bool enabled, bool progress_bar)
      : out_(out), enabled_(enabled), bar_(progress_bar) {}
  void line(const std::string& text);
  void progress(int64_t done, int64_t total);  // no-op unless progress_bar

 private:
  void clear_bar();
  std::ostream& out_;
  bool enabled_;
  bool bar_;
  bool bar_shown_ = false;
};

}  // namespace mtrain::trainer
