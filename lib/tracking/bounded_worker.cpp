#include "mtrain/tracking/bounded_worker.hpp"

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

bool BoundedWorker::stop(std::chrono::milliseconds grace) {
  bool drained;
  {
    std::unique_lock<std::mutex> lock(mu_);
    drained = idle_.wait_for(lock, grace, [this] { return queue_.empty() && !busy_; });
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
