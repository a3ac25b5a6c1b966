#include "lib/rendezvous/server.hpp"

#include <pthread.h>
#include <time.h>

#include <array>
#include <list>
#include <unordered_map>

#include <boost/asio.hpp>
#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/rendezvous/capacity.hpp"

namespace mtrain::rendezvous {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {
class Session;
}

class Server::Impl {
 public:
  Impl(ServerOptions o, const Clock& clock) : opt(std::move(o)), store(opt.store, clock) {}

  ServerOptions opt;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer ticker{io};
  std::thread thread;

  mutable std::mutex mu;  // guards store, the progress fields and epoch
  mutable std::condition_variable changed;
  Store store;
  uint64_t seen_version = 0;
  Phase reported_phase = Phase::joining;
  std::string last_progress;     // the last line reported
  bool progress_pending = false;  // a newer line waits for the interval to end
  std::chrono::steady_clock::time_point last_report{};
  // Bumped when the store's phase or round changes: held replies are answered then.
  uint64_t epoch = 0, released_epoch = 0;
  Phase epoch_phase = Phase::joining;
  int epoch_round = 0;

  // I/O thread only: open connections, and the unauthenticated ones oldest first (the first to
  // be evicted) with their count per source address.
  int open_connections = 0;
  std::list<std::weak_ptr<Session>> unauthenticated;
  std::unordered_map<std::string, int> unauthenticated_by_peer;
  std::vector<std::weak_ptr<Session>> held;  // sessions holding a waiting reply
  struct {
    std::atomic<uint64_t> accepted{0}, requests{0}, refused{0}, bad_frames{0}, timed_out{0}, over_capacity{0},
        evicted{0}, peer_limited{0};
  } count;

  // Run `f` on the store under the lock, then report progress (outside it) and wake waiters.
  // Rebuilding the progress line and waking waiters happen only when the store changed, so a
  // heartbeat costs no more than its own bookkeeping.
  static constexpr int kReportEveryChangeUpTo = 64;  // nodes

  template <class F>
  auto with_store(F&& f) {
    std::string line;
    std::unique_lock<std::mutex> lock(mu);
    auto result = f(store);
    const bool changed_now = store.version() != seen_version;
    if (changed_now) {
      seen_version = store.version();
      if (store.progress() != last_progress) progress_pending = true;
      int round = store.round();
      if (store.phase() != epoch_phase || round != epoch_round) {
        epoch_phase = store.phase();
        epoch_round = round;
        ++epoch;
      }
    }
    const uint64_t now_epoch = epoch;
    const bool release = now_epoch != released_epoch;
    released_epoch = now_epoch;
    if (progress_pending) {
      auto now = std::chrono::steady_clock::now();
      Phase phase = store.phase();
      // Small jobs report every change (a person watches each node arrive); at scale the line
      // is printed at most once per progress_interval.
      if (phase != reported_phase || now - last_report >= opt.progress_interval ||
          opt.store.max_nodes <= kReportEveryChangeUpTo) {
        line = last_progress = store.progress();
        reported_phase = phase;
        last_report = now;
        progress_pending = false;
      }
    }
    lock.unlock();
    if (changed_now) changed.notify_all();
    if (!line.empty() && opt.on_progress) opt.on_progress(line);
    // Held polls are answered when the phase or round changes, and also when a new progress
    // line is reported (at most once per progress_interval): waiting nodes print the store's
    // progress ("1 nodes joined …"), and at 4096 nodes that is a few broadcasts, not one per join.
    if (release || !line.empty()) release_held();
    return result;
  }

  // The phase or round changed: answer every held reply (after the current handler).
  void release_held();
  void accept();
  void admit(tcp::socket sock);
  void tick();
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket sock, std::string peer, Server::Impl& srv)
      : sock_(std::move(sock)), timer_(sock_.get_executor()), srv_(srv), peer_(std::move(peer)) {}

  // Registered as unauthenticated; the token-carrying first request must come within auth_timeout.
  void start() {
    pos_ = srv_.unauthenticated.insert(srv_.unauthenticated.end(), weak_from_this());
    ++srv_.unauthenticated_by_peer[peer_];
    arm(srv_.opt.auth_timeout);
    read_header();
  }

  // Closed to make room for a new connection (the store is full).
  void evict() {
    ++srv_.count.evicted;
    close();
  }

 private:
  void arm(Duration d) {
    timer_.expires_after(d);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (ec || self->closed_) return;
      ++self->srv_.count.timed_out;
      self->close();
    });
  }

  void read_header() {
    asio::async_read(sock_, asio::buffer(header_), [self = shared_from_this()](const error_code& ec, size_t) {
      if (ec || self->closed_) return self->close();
      size_t n = 0;
      const auto& o = self->srv_.opt;
      try {
        n = decode_header(self->header_, self->authed_ ? o.max_frame_bytes
                                                       : std::min(o.max_frame_bytes, o.max_unauthenticated_frame_bytes));
      } catch (const FrameError& e) {
        ++self->srv_.count.bad_frames;
        return self->reply_and_close(e.what());
      }
      if (self->authed_) self->arm(o.frame_timeout);
      self->body_.assign(n, '\0');
      self->read_body();
    });
  }

  void read_body() {
    asio::async_read(sock_, asio::buffer(&body_[0], body_.size()),
                     [self = shared_from_this()](const error_code& ec, size_t) {
                       if (ec || self->closed_) return self->close();
                       self->on_message();
                     });
  }

  void on_message() {
    nlohmann::json req;
    try {
      req = decode_payload(body_);
    } catch (const FrameError& e) {
      ++srv_.count.bad_frames;
      return reply_and_close(e.what());
    }
    std::string().swap(body_);
    ++srv_.count.requests;
    Reply r = answer(req);
    if (r.close) ++srv_.count.refused;
    else authenticated();
    // A waiting node asked to be answered when something happens: hold the reply. A join is
    // answered at once, so that the node learns (and prints) where the rendezvous stands when it
    // arrives; its following polls are held.
    auto wait = req.find("wait_ms");
    // A poll is held only when it would tell the node nothing new: a progress line the node has
    // not seen yet (the store moved on between its polls) is answered at once.
    const std::string progress = r.body.value("progress", std::string());
    if (!r.close && req.value("op", std::string()) != "join" && r.body.value("phase", std::string()) == "joining" &&
        progress == last_sent_progress_ && wait != req.end() &&
        wait->is_number_integer() && *wait > 0) {
      // A change that happens from now on posts release_held, which runs after this handler.
      const Duration hold = std::min(Duration(wait->get<long long>()), srv_.opt.max_hold);
      held_request_ = std::move(req);
      srv_.held.push_back(weak_from_this());
      timer_.expires_after(hold);
      timer_.async_wait([self = shared_from_this()](const error_code& ec) {
        if (ec || self->closed_) return;
        self->release();
      });
      return;
    }
    last_sent_progress_ = progress;
    send(encode_frame(r.body), r.close);
  }

 public:
  // Answer a held request now (the phase or round changed, or its time is up).
  void release() {
    if (closed_ || held_request_.is_null()) return;
    nlohmann::json req = std::move(held_request_);
    held_request_ = nullptr;
    timer_.cancel();
    Reply r = answer(req);
    last_sent_progress_ = r.body.value("progress", std::string());
    send(encode_frame(r.body), r.close);
  }

 private:
  Reply answer(const nlohmann::json& req) {
    try {
      return srv_.with_store([&](Store& s) { return s.handle(req); });
    } catch (const std::exception& e) {
      return {{{"ok", false}, {"error", std::string("internal error: ") + e.what()}}, true};
    }
  }

  void authenticated() {
    if (authed_) return;
    authed_ = true;
    forget_unauthenticated();
  }

  void forget_unauthenticated() {
    if (!pos_) return;
    srv_.unauthenticated.erase(*pos_);
    pos_.reset();
    auto it = srv_.unauthenticated_by_peer.find(peer_);
    if (it != srv_.unauthenticated_by_peer.end() && --it->second <= 0) srv_.unauthenticated_by_peer.erase(it);
  }

  void reply_and_close(const std::string& why) {
    ++srv_.count.refused;
    send(encode_frame({{"ok", false}, {"error", why}}), true);
  }

  void send(std::string frame, bool then_close) {
    out_ = std::move(frame);
    arm(srv_.opt.write_timeout);
    asio::async_write(sock_, asio::buffer(out_), [self = shared_from_this(), then_close](const error_code& ec, size_t) {
      if (ec || then_close || self->closed_) return self->close();
      std::string().swap(self->out_);
      self->arm(self->srv_.opt.idle_timeout);
      self->read_header();
    });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    forget_unauthenticated();
    error_code ignored;
    sock_.shutdown(tcp::socket::shutdown_both, ignored);
    sock_.close(ignored);
    timer_.cancel();
    --srv_.open_connections;
  }

  tcp::socket sock_;
  asio::steady_timer timer_;
  Server::Impl& srv_;
  std::string peer_;
  std::optional<std::list<std::weak_ptr<Session>>::iterator> pos_;  // in srv_.unauthenticated
  std::array<unsigned char, kFrameHeaderBytes> header_{};
  std::string body_;
  std::string out_;
  nlohmann::json held_request_;  // null unless a waiting reply is held
  std::string last_sent_progress_;  // the progress line this connection was last sent
  bool authed_ = false;
  bool closed_ = false;
};

}  // namespace

// Posted (with_store may run on another thread, e.g. abort()): on the I/O thread, after the
// handler running now, every reply held by then is answered.
void Server::Impl::release_held() {
  asio::post(io, [this] {
    std::vector<std::weak_ptr<Session>> now;
    now.swap(held);
    for (const auto& w : now)
      if (auto s = w.lock()) s->release();
  });
}

void Server::Impl::admit(tcp::socket sock) {
  error_code ec;
  auto remote = sock.remote_endpoint(ec);
  if (ec) return;  // already gone
  std::string peer = remote.address().to_string();
  auto per_peer = unauthenticated_by_peer.find(peer);
  if (per_peer != unauthenticated_by_peer.end() && per_peer->second >= opt.max_unauthenticated_per_peer) {
    ++count.peer_limited;
    sock.close(ec);
    return;
  }
  while (open_connections >= opt.max_connections && !unauthenticated.empty()) {
    auto oldest = unauthenticated.front().lock();
    if (oldest) oldest->evict();  // removes itself from the list
    else unauthenticated.pop_front();
  }
  if (open_connections >= opt.max_connections) {
    ++count.over_capacity;
    sock.close(ec);
    return;
  }
  ++open_connections;
  std::make_shared<Session>(std::move(sock), std::move(peer), *this)->start();
}

void Server::Impl::accept() {
  acceptor.async_accept([this](const error_code& ec, tcp::socket sock) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) {
      ++count.accepted;
      admit(std::move(sock));
    }
    accept();
  });
}

void Server::Impl::tick() {
  with_store([](Store& s) {
    s.tick();
    return 0;
  });
  ticker.expires_after(opt.tick_interval);
  ticker.async_wait([this](const error_code& ec) {
    if (!ec) tick();
  });
}

Server::Server(ServerOptions options, const Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), clock)) {}

Server::~Server() { stop(); }

void Server::start() {
  auto& im = *impl_;
  const Endpoint& ep = im.opt.listen;
  if (im.opt.max_connections <= 0) {
    const int nodes = im.opt.store.max_nodes;
    long fds = raise_fd_limit(wanted_fd_limit(nodes));
    im.opt.max_connections = connection_capacity(nodes, fds);
    if (im.opt.max_connections < nodes + 16)
      throw Error(fmt::format("the rendezvous store for {} nodes needs about {} open files, but this process may "
                              "open only {} (RLIMIT_NOFILE, hard limit included)",
                              nodes, wanted_fd_limit(nodes), fds),
                  fmt::format("Raise the limit, e.g. `ulimit -n {}` (or LimitNOFILE= for a service), or lower MAX "
                              "in --nnodes.",
                              wanted_fd_limit(nodes)));
  }
  error_code ec;
  tcp::resolver resolver(im.io);
  auto results = resolver.resolve(ep.host, std::to_string(ep.port), tcp::resolver::numeric_service, ec);
  if (ec || results.empty())
    throw Error(fmt::format("cannot resolve the rendezvous address '{}': {}", ep.host, ec.message()),
                "Give --rdzv-endpoint an address of this machine, e.g. its IP:29400.");
  tcp::endpoint where = results.begin()->endpoint();
  im.acceptor.open(where.protocol(), ec);
  if (!ec) im.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) im.acceptor.bind(where, ec);
  if (!ec) im.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    throw Error(fmt::format("cannot listen on {} ({}): {}", ep.str(), where.address().to_string(), ec.message()),
                "Is another job using this port, or is the address not one of this machine's? "
                "Choose another with --rdzv-endpoint HOST:PORT.");
  port_ = im.acceptor.local_endpoint().port();
  im.last_progress = im.store.progress();
  im.seen_version = im.store.version();
  im.last_report = std::chrono::steady_clock::now();
  if (im.opt.on_progress) im.opt.on_progress(im.last_progress);  // the first line, before anyone joins
  im.accept();
  im.tick();
  im.thread = std::thread([&im] {
    for (;;) {
      try {
        im.io.run();
        return;
      } catch (const std::exception&) {
        // A handler must never take the store down; keep serving.
      }
    }
  });
}

void Server::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->io.stop();
  impl_->thread.join();
  error_code ignored;
  impl_->acceptor.close(ignored);
}

Endpoint Server::endpoint() const { return {impl_->opt.listen.host, port_}; }

int Server::max_connections() const { return impl_->opt.max_connections; }

double Server::cpu_seconds() const {
  if (!impl_->thread.joinable()) return 0;
  clockid_t cid{};
  timespec ts{};
  if (pthread_getcpuclockid(impl_->thread.native_handle(), &cid) != 0 || clock_gettime(cid, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

StoreStatus Server::status() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->store.status();
}

ServerCounters Server::counters() const {
  const auto& c = impl_->count;
  return {c.accepted, c.requests, c.refused, c.bad_frames, c.timed_out, c.over_capacity, c.evicted, c.peer_limited};
}

void Server::abort(const std::string& reason) {
  impl_->with_store([&](Store& s) {
    s.abort(reason);
    return 0;
  });
}

bool Server::lose_host(const std::string& host, const std::string& reason) {
  return impl_->with_store([&](Store& s) { return s.lose_host(host, reason); });
}

StoreStatus Server::wait_until(const std::function<bool(const StoreStatus&)>& done, Duration timeout) const {
  std::unique_lock<std::mutex> lock(impl_->mu);
  StoreStatus s = impl_->store.status();
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done(s)) {
    if (impl_->changed.wait_until(lock, deadline) == std::cv_status::timeout) return impl_->store.status();
    s = impl_->store.status();
  }
  return s;
}

}  // namespace mtrain::rendezvous
