#include "lib/bench/rendezvous_sim.hpp"

#include <array>
#include <chrono>
#include <functional>

#include <boost/asio.hpp>
#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/rendezvous/frame.hpp"
#include "lib/core/without_throwing.hpp"

namespace mtrain::bench {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Node {
  Node(asio::io_context& io, int k) : index(k), sock(io), timer(io) {}
  int index;
  std::string id, host;
  tcp::endpoint source;  // unspecified: let the OS choose
  tcp::socket sock;
  asio::steady_timer timer;
  std::string out, body;
  std::array<unsigned char, rendezvous::kFrameHeaderBytes> header{};
  bool joined = false, formed = false;
  rendezvous::NodeAssignment assignment;
};

}  // namespace

class SimulatedNodes::Impl {
 public:
  explicit Impl(SimOptions o) : opt(std::move(o)) {
    error_code ec;
    auto addr = asio::ip::make_address(opt.server.host, ec);
    if (ec) {
      tcp::resolver r(io);
      auto res = r.resolve(opt.server.host, std::to_string(opt.server.port), tcp::resolver::numeric_service, ec);
      if (ec || res.empty()) throw Error(fmt::format("cannot resolve '{}': {}", opt.server.host, ec.message()));
      server = res.begin()->endpoint();
    } else {
      server = tcp::endpoint(addr, opt.server.port);
    }
    const bool loopback = server.address().is_loopback() && server.address().is_v4();
    for (int k = 0; k < opt.nodes; ++k) {
      auto n = std::make_unique<Node>(io, k);
      n->id = fmt::format("sim-{:06}", k);
      n->host = fmt::format("{}{}", opt.host_prefix, k);
      if (loopback)
        n->source = tcp::endpoint(asio::ip::address_v4(static_cast<uint32_t>((127u << 24) | ((1u + k / 250) << 8) |
                                                                             (1u + k % 250))),
                                  0);
      nodes.push_back(std::move(n));
    }
  }

  ~Impl() {
    without_throwing("stopping the simulated nodes", [this] { shut_down(); });
  }

  void shut_down() {
    stopping = true;
    for (auto& n : nodes) {
      error_code ignored;
      n->timer.cancel();
      n->sock.close(ignored);
    }
    io.restart();
    io.run();  // the aborted handlers see `stopping` and do nothing
  }

  // Connect (from the node's own address), then `next`; a failure retries after poll_interval.
  void connect_then(Node& n, std::function<void()> next) {
    error_code ec;
    n.sock.open(server.protocol(), ec);
    if (!ec && n.source.port() == 0 && !n.source.address().is_unspecified()) n.sock.bind(n.source, ec);
    if (ec) {
      error = fmt::format("node {} cannot open a socket: {}", n.index, ec.message());
      return;
    }
    n.sock.async_connect(server, [this, &n, next = std::move(next)](const error_code& e) {
      if (stopping) return;
      if (e) return lost(n);
      n.sock.set_option(tcp::no_delay(true));
      next();
    });
  }

  // One request and its reply; a broken connection is closed and the node starts over.
  void exchange(Node& n, json msg, std::function<void(const json&)> on_reply) {
    msg["token"] = opt.token;
    msg["node"] = n.id;
    n.out = rendezvous::encode_frame(msg);
    asio::async_write(n.sock, asio::buffer(n.out), [this, &n, on_reply = std::move(on_reply)](const error_code& e, size_t) mutable {
      if (stopping) return;
      if (e) return lost(n);
      asio::async_read(n.sock, asio::buffer(n.header), [this, &n, on_reply = std::move(on_reply)](const error_code& e2, size_t) mutable {
        if (stopping) return;
        if (e2) return lost(n);
        size_t len = 0;
        try {
          len = rendezvous::decode_header(n.header, rendezvous::kDefaultMaxFrameBytes);
        } catch (const rendezvous::FrameError& fe) {
          error = fmt::format("node {}: bad reply: {}", n.index, fe.what());
          return;
        }
        n.body.assign(len, '\0');
        asio::async_read(n.sock, asio::buffer(&n.body[0], len), [this, &n, on_reply = std::move(on_reply)](const error_code& e3, size_t) {
          if (stopping) return;
          if (e3) return lost(n);
          json reply;
          try {
            reply = rendezvous::decode_payload(n.body);
          } catch (const rendezvous::FrameError& fe) {
            error = fmt::format("node {}: bad reply: {}", n.index, fe.what());
            return;
          }
          on_reply(reply);
        });
      });
    });
  }

  void lost(Node& n) {
    error_code ignored;
    n.sock.close(ignored);
    ++reconnects;
    n.timer.expires_after(opt.poll_interval);
    n.timer.async_wait([this, &n](const error_code& e) {
      if (!e && !stopping) form_step(n);
    });
  }

  // Forming: join, then heartbeat every poll_interval until the reply carries the assignment.
  void form_step(Node& n) {
    if (!n.sock.is_open()) return connect_then(n, [this, &n] { form_step(n); });
    const long long wait_ms = opt.hold.count();
    json msg = n.joined ? json{{"op", "heartbeat"}, {"wait_ms", wait_ms}}
                        : json{{"op", "join"}, {"host", n.host}, {"addr", n.host}, {"slots", opt.slots}, {"wait_ms", wait_ms}};
    exchange(n, msg, [this, &n](const json& r) {
      if (!r.value("ok", false)) {
        error = fmt::format("the store refused node {}: {}", n.index, r.value("error", std::string("?")));
        return;
      }
      n.joined = true;
      std::string phase = r.value("phase", std::string());
      if (phase == "failed") {
        error = "the rendezvous failed: " + r.value("reason", std::string("?"));
        return;
      }
      if (phase != "joining" && r.contains("assignment")) {
        try {
          n.assignment = rendezvous::node_assignment_from_json(r.at("assignment"));
        } catch (const rendezvous::FrameError& e) {
          error = fmt::format("node {}: {}", n.index, e.what());
          return;
        }
        n.formed = true;
        ++formed;
        return;
      }
      n.timer.expires_after(opt.poll_interval);
      n.timer.async_wait([this, &n](const error_code& e) {
        if (!e && !stopping) form_step(n);
      });
    });
  }

  void beat(Node& n, Clock::time_point when, Clock::duration interval, Clock::time_point end) {
    n.timer.expires_at(when);
    n.timer.async_wait([this, &n, when, interval, end](const error_code& e) {
      if (e || stopping || when >= end) return;
      auto send = [this, &n, when, interval, end] {
        exchange(n, {{"op", "heartbeat"}, {"brief", true}}, [this, &n, when, interval, end](const json& r) {
          if (!r.value("ok", false) || r.value("phase", std::string()) != "running") {
            error = fmt::format("node {}: the job stopped running: {}", n.index,
                                r.value("reason", r.value("error", std::string("?"))));
            return;
          }
          ++beats;
          beat(n, when + interval, interval, end);
        });
      };
      if (!n.sock.is_open()) connect_then(n, send);
      else send();
    });
  }

  // Run the loop until `done()`, an error, or the deadline.
  void run_until(const std::function<bool()>& done, Clock::time_point deadline) {
    io.restart();
    while (!done() && error.empty() && Clock::now() < deadline) io.run_one_until(deadline);
  }

  SimOptions opt;
  asio::io_context io;
  tcp::endpoint server;
  std::vector<std::unique_ptr<Node>> nodes;
  std::string error;
  bool stopping = false;
  int formed = 0;
  uint64_t reconnects = 0, beats = 0;
};

SimulatedNodes::SimulatedNodes(SimOptions o) : impl_(std::make_unique<Impl>(std::move(o))) {}
SimulatedNodes::~SimulatedNodes() = default;

double SimulatedNodes::form(rendezvous::Duration timeout) {
  auto& im = *impl_;
  auto t0 = Clock::now();
  for (auto& n : im.nodes) im.form_step(*n);
  im.run_until([&] { return im.formed == static_cast<int>(im.nodes.size()); }, t0 + timeout);
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!im.error.empty()) throw Error(im.error, "", kExitFailure);
  if (im.formed < static_cast<int>(im.nodes.size()))
    throw Error(fmt::format("only {} of {} simulated nodes received their assignment within {}", im.formed,
                            im.nodes.size(), rendezvous::format_duration(timeout)),
                "", kExitFailure);
  return s;
}

uint64_t SimulatedNodes::heartbeat(rendezvous::Duration interval, rendezvous::Duration span) {
  auto& im = *impl_;
  im.beats = 0;
  auto start = Clock::now();
  auto end = start + span;
  const auto n = static_cast<long>(im.nodes.size());
  for (auto& node : im.nodes) im.beat(*node, start + interval * node->index / n, interval, end);
  im.run_until([] { return false; }, end);
  for (auto& node : im.nodes) node->timer.cancel();
  if (!im.error.empty()) throw Error(im.error, "", kExitFailure);
  return im.beats;
}

const rendezvous::NodeAssignment& SimulatedNodes::assignment(int k) const {
  return impl_->nodes.at(static_cast<size_t>(k))->assignment;
}

uint64_t SimulatedNodes::reconnects() const { return impl_->reconnects; }

}  // namespace mtrain::bench
