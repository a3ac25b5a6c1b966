#pragma once
// The rendezvous store served over TCP by the launcher (Boost.Asio, one I/O thread).
//
// Safety: it binds exactly the address it is given (a host name is resolved and its first
// address bound; 0.0.0.0 only if written so); a wrong token, a bad frame (magic, size, JSON)
// or an unknown op gets an error reply and a closed connection. Nothing a peer sends can throw
// out of the I/O thread.
//
// Idle and unauthenticated peers cannot keep nodes out. A connection is unauthenticated until
// the store accepted a request carrying the job token. Such a connection
//   * must deliver that request within `auth_timeout` (2 s) of connecting, in a frame of at
//     most `max_unauthenticated_frame_bytes` (a join is ~200 bytes), or it is closed;
//   * is refused at accept when its source address already holds
//     `max_unauthenticated_per_peer` unauthenticated connections;
//   * is the first to go when the store is full: a new connection evicts the oldest
//     unauthenticated one; only when every open connection is authenticated is the new one
//     closed (over capacity).
// The capacity (`max_connections`, 0 = derived) is 2 per node of MAX plus headroom, within
// the descriptor limit, which start() raises when short (capacity.hpp). Authenticated
// connections then get `frame_timeout` per frame and `idle_timeout` between requests.
//
// Waiting replies: a join or heartbeat carrying "wait_ms" whose answer is "joining" is held
// for up to min(wait_ms, max_hold) and answered as soon as the job's phase or round changes
// (not on every join: that would answer every waiting node N times). So thousands of waiting
// nodes learn that the job formed at once instead of at their next poll, and poll less.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "lib/rendezvous/clock.hpp"
#include "lib/rendezvous/endpoint.hpp"
#include "lib/rendezvous/frame.hpp"
#include "lib/rendezvous/store.hpp"

namespace mtrain::rendezvous {

struct ServerOptions {
  Endpoint listen;  // port 0: the OS picks a free port (see Server::port)
  StoreOptions store;
  size_t max_frame_bytes = kDefaultMaxFrameBytes;
  Duration auth_timeout{2000};    // to deliver the first, token-carrying request after connecting
  Duration frame_timeout{5000};   // an authenticated peer: to deliver the rest of a started frame
  Duration idle_timeout{300000};  // an authenticated connection with no request for this long is closed
  Duration write_timeout{5000};   // a peer that does not read its reply is dropped
  int max_connections = 0;        // 0: connection_capacity(store.max_nodes, the descriptor limit)
  int max_unauthenticated_per_peer = 64;
  Duration max_hold{2000};        // the longest a waiting reply is held
  size_t max_unauthenticated_frame_bytes = 4096;
  Duration tick_interval{100};    // how often time-driven transitions are applied
  // Progress lines are reported at most this often while nodes join (4096 joins are not 4096
  // lines); the latest one is reported when the interval ends, and a phase change at once.
  Duration progress_interval{500};
  // Called with the first progress line by start(), then on the I/O thread whenever it changes ("2/3 nodes joined; …").
  std::function<void(const std::string&)> on_progress;
};

// What the server has seen, for logs and tests.
struct ServerCounters {
  uint64_t accepted = 0;
  uint64_t requests = 0;
  uint64_t refused = 0;         // error replies that closed the connection (token, malformed)
  uint64_t bad_frames = 0;      // framing or JSON errors
  uint64_t timed_out = 0;       // closed for a read or write deadline (the auth deadline included)
  uint64_t over_capacity = 0;   // closed at accept: max_connections open, all authenticated
  uint64_t evicted = 0;         // unauthenticated connections closed to make room for a new one
  uint64_t peer_limited = 0;    // closed at accept: too many unauthenticated ones from that address
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
  // The connection capacity in effect (after start()).
  int max_connections() const;
  // CPU time the I/O thread has used so far (for `mtrain bench rendezvous`).
  double cpu_seconds() const;

  StoreStatus status() const;
  ServerCounters counters() const;
  void abort(const std::string& reason);
  bool lose_host(const std::string& host, const std::string& reason);  // Store::lose_host
  // Block until `done(status)` holds or `timeout` passes; returns the last status either way.
  StoreStatus wait_until(const std::function<bool(const StoreStatus&)>& done, Duration timeout) const;

  class Impl;  // opaque; public only so the server's session type can name it

 private:
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace mtrain::rendezvous
