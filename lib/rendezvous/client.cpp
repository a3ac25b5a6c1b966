#include "lib/rendezvous/client.hpp"

#include <array>
#include <thread>

#include <boost/asio.hpp>
#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/rendezvous/token.hpp"

namespace mtrain::rendezvous {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using nlohmann::json;

namespace {
// Not reachable yet (the store's launcher may start after this agent): worth retrying.
struct Unreachable : std::runtime_error {
  using std::runtime_error::runtime_error;
};
}  // namespace

// One TCP connection; each blocking step runs the io_context for at most the time left.
class Client::Conn {
 public:
  explicit Conn(const ClientOptions& o) : opt_(o) {}

  json round_trip(const json& msg, Duration timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    if (!sock_.is_open()) connect(deadline);
    try {
      return exchange(msg, deadline);
    } catch (const Unreachable&) {
      // The server may have closed an idle connection: one fresh attempt within the same deadline.
      reset();
      connect(deadline);
      return exchange(msg, deadline);
    }
  }

  void reset() {
    error_code ignored;
    sock_.close(ignored);
  }

 private:
  // Run until `ec` is set by the pending operation or the deadline passes (then cancel it).
  void run_until(const error_code& ec, std::chrono::steady_clock::time_point deadline) {
    io_.restart();
    while (ec == asio::error::would_block) {
      auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero() || io_.stopped()) break;
      io_.run_one_for(left);
    }
    if (ec == asio::error::would_block) {
      reset();  // cancels the operation; its handler runs with operation_aborted
      io_.restart();
      io_.run();
      throw Unreachable("timed out");
    }
  }

  void connect(std::chrono::steady_clock::time_point deadline) {
    error_code ec;
    tcp::resolver resolver(io_);
    auto results = resolver.resolve(opt_.server.host, std::to_string(opt_.server.port),
                                    tcp::resolver::numeric_service, ec);
    if (ec) throw Unreachable(fmt::format("cannot resolve '{}': {}", opt_.server.host, ec.message()));
    ec = asio::error::would_block;
    asio::async_connect(sock_, results, [&](const error_code& e, const tcp::endpoint&) { ec = e; });
    run_until(ec, deadline);
    if (ec) {
      reset();
      throw Unreachable(ec.message());
    }
    sock_.set_option(tcp::no_delay(true), ec);
  }

  json exchange(const json& msg, std::chrono::steady_clock::time_point deadline) {
    std::string out = encode_frame(msg);
    error_code ec = asio::error::would_block;
    asio::async_write(sock_, asio::buffer(out), [&](const error_code& e, size_t) { ec = e; });
    run_until(ec, deadline);
    if (ec) throw Unreachable(ec.message());

    std::array<unsigned char, kFrameHeaderBytes> header{};
    ec = asio::error::would_block;
    asio::async_read(sock_, asio::buffer(header), [&](const error_code& e, size_t) { ec = e; });
    run_until(ec, deadline);
    if (ec) throw Unreachable(ec == asio::error::eof ? std::string("the store closed the connection") : ec.message());
    std::string body(decode_header(header, opt_.max_frame_bytes), '\0');
    ec = asio::error::would_block;
    asio::async_read(sock_, asio::buffer(&body[0], body.size()), [&](const error_code& e, size_t) { ec = e; });
    run_until(ec, deadline);
    if (ec) throw Unreachable(ec.message());
    return decode_payload(body);
  }

  const ClientOptions& opt_;
  asio::io_context io_;
  tcp::socket sock_{io_};
};

Client::Client(ClientOptions options) : opt_(std::move(options)) {
  if (opt_.node_id.empty()) opt_.node_id = generate_token().substr(0, 16);
  if (opt_.addr.empty()) opt_.addr = opt_.host;
  conn_ = std::make_unique<Conn>(opt_);
}

Client::~Client() = default;

const std::string& Client::node_id() const { return opt_.node_id; }

json Client::request(json message) {
  message["token"] = opt_.token;
  message["node"] = opt_.node_id;
  try {
    json reply = conn_->round_trip(message, opt_.op_timeout);
    if (!reply.value("ok", false)) conn_->reset();  // the store may close after an error reply
    return reply;
  } catch (const Unreachable& e) {
    conn_->reset();
    throw Error(fmt::format("rendezvous store {} did not answer within {}: {}", opt_.server.str(),
                            format_duration(opt_.op_timeout), e.what()),
                "Check --rdzv-endpoint and that the launcher holding the store is running.", kExitFailure);
  } catch (const FrameError& e) {
    conn_->reset();
    throw Error(fmt::format("rendezvous store {} sent a bad reply: {}", opt_.server.str(), e.what()),
                "Is --rdzv-endpoint pointing at an mtrain launcher of the same version?", kExitFailure);
  }
}

JobState Client::job_state(const json& reply) const {
  if (!reply.value("ok", false))
    throw Error(fmt::format("rendezvous store {} refused node '{}': {}", opt_.server.str(), opt_.host,
                            reply.value("error", std::string("no reason given"))),
                "", kExitFailure);
  JobState s;
  std::string phase = reply.value("phase", std::string());
  if (phase == "joining") s.phase = Phase::joining;
  else if (phase == "running") s.phase = Phase::running;
  else if (phase == "finished") s.phase = Phase::finished;
  else if (phase == "failed") s.phase = Phase::failed;
  else throw Error(fmt::format("rendezvous store {} sent an unknown phase '{}'", opt_.server.str(), phase), "", kExitFailure);
  s.reason = reply.value("reason", std::string());
  s.round = reply.value("round", 0);
  s.restart_reason = reply.value("restart_reason", std::string());
  s.membership_change = reply.value("membership_change", false);
  return s;
}

JoinResult Client::join() {
  const auto deadline = std::chrono::steady_clock::now() + opt_.join_timeout;
  auto time_left = [&] { return deadline - std::chrono::steady_clock::now(); };
  std::string last_progress;
  bool joined = false;
  std::string last_error;
  for (;;) {
    if (time_left() <= std::chrono::steady_clock::duration::zero())
      throw Error(fmt::format("node '{}' could not complete the rendezvous at {} within {}{}", opt_.host,
                              opt_.server.str(), format_duration(opt_.join_timeout),
                              last_error.empty() ? std::string() : ": " + last_error),
                  "Check that the launcher holding the store runs and that this host can reach it.", kExitFailure);
    json reply;
    try {
      // Both may be held by the store until the job forms (or `hold` passes): see server.hpp.
      const long long wait_ms = std::min(opt_.hold, opt_.op_timeout / 2).count();
      if (!joined)
        reply = request({{"op", "join"}, {"host", opt_.host}, {"addr", opt_.addr}, {"slots", opt_.slots}, {"wait_ms", wait_ms}});
      else reply = request({{"op", "heartbeat"}, {"wait_ms", wait_ms}});
    } catch (const Error& e) {
      last_error = e.message();  // not up yet or unreachable for now: retry until the deadline
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(opt_.poll_interval, time_left()));
      continue;
    }
    JobState s = job_state(reply);
    joined = true;
    std::string progress = reply.value("progress", std::string());
    if (progress != last_progress && opt_.on_progress) opt_.on_progress(progress);
    last_progress = progress;
    if (s.phase == Phase::failed) throw Error(s.reason, "", kExitFailure);
    if (s.phase != Phase::joining) {
      if (!reply.contains("assignment") || !reply.contains("node_rank"))
        throw Error(fmt::format("node '{}' is not part of the job that formed", opt_.host), "", kExitFailure);
      JoinResult r;
      try {
        r.assignment = node_assignment_from_json(reply.at("assignment"));
        r.node_rank = reply.at("node_rank").get<int>();
        r.round = reply.value("round", 0);
        r.restarts = reply.value("restarts", 0);
        r.restart_reason = reply.value("restart_reason", std::string());
        r.lost = reply.value("lost", std::vector<std::string>());
      } catch (const std::exception& e) {
        throw Error(fmt::format("rendezvous store sent a bad assignment: {}", e.what()), "", kExitFailure);
      }
      if (r.node_rank != r.assignment.self.node_rank)
        throw Error("rendezvous store sent a node rank that is not the one in its assignment", "", kExitFailure);
      return r;
    }
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(opt_.poll_interval, time_left()));
  }
}

JobState Client::heartbeat() { return job_state(request({{"op", "heartbeat"}, {"brief", true}})); }

JobState Client::report_failure(const std::string& reason) {
  return job_state(request({{"op", "fail"}, {"reason", reason}}));
}

JobState Client::leave() { return job_state(request({{"op", "leave"}})); }

}  // namespace mtrain::rendezvous
