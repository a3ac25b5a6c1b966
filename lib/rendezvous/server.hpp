#pragma once
// The rendezvous store served over TCP by the launcher (Boost.Asio, one I/O thread).
//
// Safety: it binds exactly the address it is given (a host name is resolved and its first
// address bound; 0.0.0.0 only if written so); a connection must deliver a whole valid frame
// carrying the job token within `frame_timeout` of connecting, and each later frame within
// `frame_timeout` of its header, otherwise it is closed; a wrong token, a bad frame (magic,
// size, JSON) or an unknown op gets an error reply and a closed connection; connections above
// `max_connections` are closed at once. Nothing a peer sends can throw out of the I/O thread.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "mtrain/rendezvous/clock.hpp"
#include "mtrain/rendezvous/endpoint.hpp"
#include "mtrain/rendezvous/frame.hpp"
#include "mtrain/rendezvous/store.hpp"

namespace mtrain::rendezvous {

struct ServerOptions {
  Endpoint listen;  // port 0: the OS picks a free port (see Server::port)
  StoreOptions store;
  size_t max_frame_bytes = kDefaultMaxFrameBytes;
  Duration frame_timeout{5000};   // to deliver a started frame (and the first one after connecting)
  Duration idle_timeout{300000};  // an authenticated connection with no request for this long is closed
  Duration write_timeout{5000};   // a peer that does not read its reply is dropped
  int max_connections = 256;
  Duration tick_interval{100};    // how often time-driven transitions are applied
  // Called with the first progress line by start(), then on the I/O thread whenever it changes ("2/3 nodes joined; …").
  std::function<void(const std::string&)> on_progress;
};

// What the server has seen, for logs and tests.
struct ServerCounters {
  uint64_t accepted = 0;
  uint64_t requests = 0;
  uint64_t refused = 0;         // error replies that closed the connection (token, malformed)
  uint64_t bad_frames = 0;      // framing or JSON errors
  uint64_t timed_out = 0;       // closed for a read or write deadline
  uint64_t over_capacity = 0;   // closed because max_connections were open
};

class Server {
 public:
  explicit Server(ServerOptions options, const Clock& clock = real_clock());
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Bind, listen and start the I/O thread; an address that cannot be resolved or bound is an
  // mtrain::Error naming it.
  void start();
  void stop();
  uint16_t port() const { return port_; }
  Endpoint endpoint() const;

  StoreStatus status() const;
  ServerCounters counters() const;
  void abort(const std::string& reason);
  // Block until `done(status)` holds or `timeout` passes; returns the last status either way.
  StoreStatus wait_until(const std::function<bool(const StoreStatus&)>& done, Duration timeout) const;

  class Impl;  // opaque; public only so the server's session type can name it

 private:
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace mtrain::rendezvous
