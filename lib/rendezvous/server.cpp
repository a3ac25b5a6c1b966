#include "mtrain/rendezvous/server.hpp"

#include <array>

#include <boost/asio.hpp>
#include <fmt/format.h>

#include "mtrain/core/error.hpp"

namespace mtrain::rendezvous {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

class Server::Impl {
 public:
  Impl(ServerOptions o, const Clock& clock) : opt(std::move(o)), store(opt.store, clock) {}

  ServerOptions opt;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer ticker{io};
  std::thread thread;

  mutable std::mutex mu;  // guards store and last_progress
  mutable std::condition_variable changed;
  Store store;
  std::string last_progress;

  int open_connections = 0;  // I/O thread only
  struct {
    std::atomic<uint64_t> accepted{0}, requests{0}, refused{0}, bad_frames{0}, timed_out{0}, over_capacity{0};
  } count;

  // Under no lock: run `f` on the store, then report progress and wake waiters.
  template <class F>
  auto with_store(F&& f) {
    std::string line;
    bool report = false;
    std::unique_lock<std::mutex> lock(mu);
    auto result = f(store);
    std::string now = store.status().progress;
    if (now != last_progress) {
      last_progress = now;
      line = now;
      report = true;
    }
    lock.unlock();
    changed.notify_all();
    if (report && opt.on_progress) opt.on_progress(line);
    return result;
  }

  void accept();
  void tick();
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket sock, Server::Impl& srv) : sock_(std::move(sock)), timer_(sock_.get_executor()), srv_(srv) {}

  void start() {
    arm(srv_.opt.frame_timeout);  // the first frame, token included, must arrive promptly
    read_header();
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
      try {
        n = decode_header(self->header_, self->srv_.opt.max_frame_bytes);
      } catch (const FrameError& e) {
        ++self->srv_.count.bad_frames;
        return self->reply_and_close(e.what());
      }
      if (self->authed_) self->arm(self->srv_.opt.frame_timeout);
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
    ++srv_.count.requests;
    Reply r;
    try {
      r = srv_.with_store([&](Store& s) { return s.handle(req); });
    } catch (const std::exception& e) {
      r = {{{"ok", false}, {"error", std::string("internal error: ") + e.what()}}, true};
    }
    if (r.close) ++srv_.count.refused;
    else authed_ = true;
    send(encode_frame(r.body), r.close);
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
      self->arm(self->srv_.opt.idle_timeout);
      self->read_header();
    });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    error_code ignored;
    sock_.shutdown(tcp::socket::shutdown_both, ignored);
    sock_.close(ignored);
    timer_.cancel();
    --srv_.open_connections;
  }

  tcp::socket sock_;
  asio::steady_timer timer_;
  Server::Impl& srv_;
  std::array<unsigned char, kFrameHeaderBytes> header_{};
  std::string body_;
  std::string out_;
  bool authed_ = false;
  bool closed_ = false;
};

}  // namespace

void Server::Impl::accept() {
  acceptor.async_accept([this](const error_code& ec, tcp::socket sock) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) {
      ++count.accepted;
      if (open_connections >= opt.max_connections) {
        ++count.over_capacity;
        error_code ignored;
        sock.close(ignored);
      } else {
        ++open_connections;
        std::make_shared<Session>(std::move(sock), *this)->start();
      }
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
  im.last_progress = im.store.status().progress;
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

StoreStatus Server::status() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->store.status();
}

ServerCounters Server::counters() const {
  const auto& c = impl_->count;
  return {c.accepted, c.requests, c.refused, c.bad_frames, c.timed_out, c.over_capacity};
}

void Server::abort(const std::string& reason) {
  impl_->with_store([&](Store& s) {
    s.abort(reason);
    return 0;
  });
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
