#pragma once
// One background thread running queued tasks in order, with a bounded queue: push() never
// waits (a full queue drops the task and counts it), so the training loop that pushes cannot be
// held up by whatever the tasks wait on (a slow or absent server).
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace mtrain::tracking {

class BoundedWorker {
 public:
  explicit BoundedWorker(size_t capacity);
  ~BoundedWorker();  // as stop(0): drops what is queued, waits for the running task
  BoundedWorker(const BoundedWorker&) = delete;
  BoundedWorker& operator=(const BoundedWorker&) = delete;

  // False (and the task dropped) when the queue is full or stopped.
  bool push(std::function<void()> task);
  // Lets the queue drain for up to `grace`, then drops what is left and joins the thread once the
  // running task returns (tasks bound their own time). True if everything queued ran.
  // `waiting` is called about once a second meanwhile, on the caller's thread: a trainer touches
  // its heartbeat there, or the launcher's stall watch (20 s at fast steps) kills it while a
  // backlog drains.
  bool stop(std::chrono::milliseconds grace, const std::function<void()>& waiting = {});
  int64_t dropped() const;

 private:
  void run();

  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false, stopping_ = false;
  int64_t dropped_ = 0;
  std::thread thread_;
};

}  // namespace mtrain::tracking
