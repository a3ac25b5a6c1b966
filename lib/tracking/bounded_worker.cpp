#include "lib/tracking/bounded_worker.hpp"

#include <algorithm>

namespace mtrain::tracking {

BoundedWorker::BoundedWorker(size_t capacity) : capacity_(capacity), thread_([this] { run(); }) {}

BoundedWorker::~BoundedWorker() { stop(std::chrono::milliseconds(0)); }

bool BoundedWorker::push(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= capacity_) {
      ++dropped_;
      return false;
    }
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
  return true;
}

bool BoundedWorker::stop(std::chrono::milliseconds grace, const std::function<void()>& waiting) {
  bool drained = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    for (;;) {
      const auto slice = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(1));
      drained = idle_.wait_until(lock, slice, [this] { return queue_.empty() && !busy_; });
      if (drained || std::chrono::steady_clock::now() >= deadline) break;
      if (waiting) {
        lock.unlock();
        waiting();
        lock.lock();
      }
    }
    dropped_ += static_cast<int64_t>(queue_.size());
    queue_.clear();
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  return drained;
}

int64_t BoundedWorker::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

void BoundedWorker::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    task();
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace mtrain::tracking
