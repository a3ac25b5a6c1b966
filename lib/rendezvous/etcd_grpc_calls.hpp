#pragma once
// How the etcd gRPC client (etcd_grpc.cpp, its only user) waits for one call: gRPC's callback
// API, whose own threads drive every call of the process while the calling thread sleeps. A
// unary call, the one-request lease keep-alive stream, and a watch with its two waits (etcd's
// confirmation, then an event). Apart from etcd_grpc.cpp because it is the concurrency: the
// reactors' locking and their lifetime against gRPC's threads.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

#include <grpcpp/grpcpp.h>

#include "etcd_api.grpc.pb.h"

namespace mtrain::rendezvous::grpc_calls {

namespace pb = etcdserverpb;

// The end of a call made with gRPC's callback API. gRPC's own threads drive every call of the
// process and run the callback; the calling thread sleeps here. (The synchronous API makes each
// waiting thread poll the connections itself: with hundreds of clients in one process, as in
// `mtrain bench rendezvous`, they spent a quarter of the CPU waking each other.) The call's
// deadline bounds the wait: gRPC ends it with DEADLINE_EXCEEDED.
class CallDone {
 public:
  std::function<void(grpc::Status)> callback() {
    return [this](grpc::Status s) {
      std::lock_guard lock(mu_);
      status_ = std::move(s);
      done_ = true;
      cv_.notify_one();
    };
  }
  grpc::Status wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    return status_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  grpc::Status status_;
};

// A unary call `start(callback)` begins on the callback API, waited for.
template <class Start>
grpc::Status unary(const Start& start) {
  CallDone done;
  start(done.callback());
  return done.wait();
}

// The lease keep-alive stream for one request: write it and half-close, read the one answer; the
// call ends when etcd ends its side.
class KeepAliveOnce final : public grpc::ClientBidiReactor<pb::LeaseKeepAliveRequest, pb::LeaseKeepAliveResponse> {
 public:
  KeepAliveOnce(pb::Lease::Stub& stub, grpc::ClientContext& ctx, const pb::LeaseKeepAliveRequest& req,
                pb::LeaseKeepAliveResponse& resp) {
    stub.async()->LeaseKeepAlive(&ctx, this);
    StartWriteLast(&req, grpc::WriteOptions());
    StartRead(&resp);
    StartCall();
  }
  void OnDone(const grpc::Status& s) override { done_.callback()(s); }
  grpc::Status wait() { return done_.wait(); }

 private:
  CallDone done_;
};

// One watch. etcd first confirms it ("created"), then sends events; the caller waits for the
// confirmation within the op timeout (else the member counts as unreachable) and for an event as
// long as it wants. The wait's end cancels the call; the reactor lives until gRPC says it is done.
class WatchReactor final : public grpc::ClientBidiReactor<pb::WatchRequest, pb::WatchResponse> {
 public:
  using Clock = std::chrono::system_clock;
  WatchReactor(pb::Watch::Stub& stub, grpc::ClientContext& ctx, const pb::WatchRequest& req) : ctx_(ctx) {
    stub.async()->Watch(&ctx, this);
    StartWrite(&req);
    StartRead(&resp_);
    StartCall();
  }
  ~WatchReactor() override {
    ctx_.TryCancel();
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return done_; });
  }
  WatchReactor(const WatchReactor&) = delete;
  WatchReactor& operator=(const WatchReactor&) = delete;

  void OnWriteDone(bool) override {}
  void OnReadDone(bool ok) override {
    std::lock_guard lock(mu_);
    if (!ok) return;  // the stream ends: OnDone follows with its status
    confirmed_ = true;
    if (resp_.canceled() || resp_.events_size() > 0) {
      final_ = resp_;
      has_final_ = true;
    } else {
      resp_.Clear();
      StartRead(&resp_);  // a confirmation or a progress notice: keep reading
    }
    cv_.notify_all();
  }
  void OnDone(const grpc::Status& s) override {
    std::lock_guard lock(mu_);
    status_ = s;
    done_ = true;
    cv_.notify_all();
  }

  enum class Outcome { confirmed, unconfirmed, event, ended, idle };
  // Until etcd confirms the watch (or the stream ends) by `until`.
  Outcome await_confirmation(Clock::time_point until) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, until, [this] { return confirmed_ || done_; });
    if (has_final_) return Outcome::event;
    if (confirmed_) return Outcome::confirmed;
    return done_ ? Outcome::ended : Outcome::unconfirmed;
  }
  // Until an event (or the stream's end) by `until`.
  Outcome await_event(Clock::time_point until) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, until, [this] { return has_final_ || done_; });
    if (has_final_) return Outcome::event;
    return done_ ? Outcome::ended : Outcome::idle;
  }
  const pb::WatchResponse& final_response() const { return final_; }
  grpc::Status status() {
    std::lock_guard lock(mu_);
    return status_;
  }

 private:
  grpc::ClientContext& ctx_;
  std::mutex mu_;
  std::condition_variable cv_;
  pb::WatchResponse resp_, final_;
  bool confirmed_ = false, has_final_ = false, done_ = false;
  grpc::Status status_;
};

}  // namespace mtrain::rendezvous::grpc_calls
