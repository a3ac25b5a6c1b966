#include "lib/rendezvous/etcd_http.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::rendezvous {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using nlohmann::json;

namespace {

// The member did not answer usefully (refused, reset, timed out, no leader): try the next one.
struct EtcdUnreachable : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A streaming reply (watch) did not show what we wait for within its time: not an error.
struct EtcdStreamIdle {};
// etcd said our auth token is no longer valid (it expires; the member restarted).
struct EtcdAuthExpired {};

std::string etcd_b64(const std::string& s) {
  std::string out(beast::detail::base64::encoded_size(s.size()), '\0');
  out.resize(beast::detail::base64::encode(out.data(), s.data(), s.size()));
  return out;
}

std::string etcd_unb64(const std::string& s) {
  std::string out(beast::detail::base64::decoded_size(s.size()), '\0');
  out.resize(beast::detail::base64::decode(out.data(), s.data(), s.size()).first);
  return out;
}

// The gateway writes int64 fields as strings and omits zero values.
int64_t etcd_i64(const json& j, const char* field) {
  auto it = j.find(field);
  if (it == j.end()) return 0;
  if (it->is_string()) return std::stoll(it->get<std::string>());
  if (it->is_number()) return it->get<int64_t>();
  return 0;
}

KeyValue etcd_kv_of(const json& j) {
  KeyValue kv;
  kv.key = etcd_unb64(j.value("key", ""));
  kv.value = etcd_unb64(j.value("value", ""));
  kv.create_revision = etcd_i64(j, "create_revision");
  kv.mod_revision = etcd_i64(j, "mod_revision");
  kv.lease = etcd_i64(j, "lease");
  return kv;
}

json etcd_put_request(const std::string& key, const std::string& value, int64_t lease) {
  json p = {{"key", etcd_b64(key)}, {"value", etcd_b64(value)}};
  if (lease != 0) p["lease"] = std::to_string(lease);
  return p;
}

// Where the first of the `until` markers is in the streamed body (npos: none yet).
size_t etcd_marker(const std::string& body, const std::vector<std::string>& until) {
  size_t at = std::string::npos;
  for (const auto& u : until) at = std::min(at, body.find(u));
  return at;
}

// Whether the streamed body holds the whole message that contains one of `until`: the gateway
// ends each message with a newline, and a message (a watch event carrying a large value) may
// arrive over several reads; parsing it before its newline came read half a JSON object.
bool etcd_message_complete(const std::string& body, const std::vector<std::string>& until) {
  const size_t at = etcd_marker(body, until);
  return at != std::string::npos && body.find('\n', at) != std::string::npos;
}

// The first JSON object of a streamed reply holding one of `until` (the gateway writes one per line).
json etcd_first_message(const std::string& body, const std::vector<std::string>& until) {
  size_t at = etcd_marker(body, until);
  size_t start = body.rfind('\n', at);
  start = start == std::string::npos ? 0 : start + 1;
  size_t end = body.find('\n', at);
  return json::parse(body.substr(start, end == std::string::npos ? std::string::npos : end - start));
}

}  // namespace

EtcdHttp::EtcdHttp(EtcdOptions options) : opt_(std::move(options)) {
  if (opt_.endpoints.empty()) throw Error("etcd: no endpoint given", "--rdzv-endpoint host1:2379,host2:2379,host3:2379");
  // Every node is given the same list: starting each at a random member spreads a job's requests
  // over the cluster instead of queueing them all at the first member.
  preferred_ = std::random_device{}() % opt_.endpoints.size();
  if (opt_.tls) tls_ = std::make_shared<EtcdTlsContext>(opt_.tls_files);
}

// A connection to one member, kept open between requests (HTTP/1.1 keep-alive): a new TCP (and
// TLS) connection per request cost the member an accept, a goroutine and a handshake every time.
struct EtcdConnection {
  asio::io_context io;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  std::optional<beast::tcp_stream> plain;
  beast::error_code ec;
  beast::flat_buffer buf;
  size_t member = 0;
  bool answered = false;  // it answered a request before: a failure to send the next may mean it idled out
  beast::tcp_stream& tcp() { return tls ? tls->next_layer() : *plain; }
};

namespace {

// A kept connection the member had closed (idle, restarted) before our request reached it: the
// request is sent again on a new connection, not counted against the member.
struct EtcdStaleConnection {};

// One request and its reply on `c` (its plain or TLS `stream`). `step(name)` runs the io_context
// that drives it and turns the step's error into what it means; a stream's idle end is EtcdStreamIdle.
template <class Stream, class Step>
std::pair<unsigned, std::string> etcd_round_trip(EtcdConnection& c, Stream& stream, const Step& step,
                                                 http::request<http::string_body>& req,
                                                 const std::vector<std::string>& until, Duration op_timeout,
                                                 Duration wait) {
  c.tcp().expires_after(op_timeout);
  http::async_write(stream, req, [&c](beast::error_code e, size_t) { c.ec = e; });
  step("request");
  http::response_parser<http::string_body> parser;
  parser.body_limit(kEtcdMaxReplyBytes);
  http::async_read_header(stream, c.buf, parser, [&c](beast::error_code e, size_t) { c.ec = e; });
  step("reply");
  const unsigned status = parser.get().result_int();
  if (until.empty() || status != 200) {
    http::async_read(stream, c.buf, parser, [&c](beast::error_code e, size_t) { c.ec = e; });
    step("reply body");
    c.answered = parser.get().keep_alive();
  } else {
    // A stream: read what arrives until the awaited message is whole or `wait` passes.
    c.tcp().expires_after(wait);
    while (!parser.is_done() && !etcd_message_complete(parser.get().body(), until)) {
      http::async_read_some(stream, c.buf, parser, [&c](beast::error_code e, size_t) { c.ec = e; });
      if (step("stream")) throw EtcdStreamIdle{};
    }
    c.answered = false;  // the stream still runs: this connection is not reused
  }
  return {status, std::move(parser.get().body())};
}

}  // namespace

EtcdHttp::~EtcdHttp() = default;

// Runs what was started on `c`; true when a stream's wait ran out (only "stream" steps ask).
bool EtcdHttp::step(EtcdConnection& c, const char* name) const {
  c.io.restart();
  c.io.run();
  const std::string what = name;
  if (c.ec == beast::error::timeout) {
    if (what == "stream") return true;
    throw EtcdUnreachable(fmt::format("{} timed out after {}", what, format_duration(opt_.op_timeout)));
  }
  // A reply that ends with the connection is whole; a stream that ends did not show its message.
  if (!c.ec || (c.ec == http::error::end_of_stream && what == "reply body")) return false;
  if (c.answered && (what == "request" || what == "reply") &&
      (c.ec == http::error::end_of_stream || c.ec == asio::error::eof || c.ec == asio::error::connection_reset ||
       c.ec == asio::error::broken_pipe))
    throw EtcdStaleConnection{};
  if (tls_)
    if (auto refused = tls_->refusal(c.ec, c.tls->native_handle(), opt_.endpoints[c.member].str())) throw *refused;
  throw EtcdUnreachable(fmt::format("{}: {}", what, c.ec.message()));
}

std::unique_ptr<EtcdConnection> EtcdHttp::connect(size_t member) const {
  const Endpoint& ep = opt_.endpoints[member];
  auto c = std::make_unique<EtcdConnection>();
  c->member = member;
  tcp::resolver resolver(c->io);
  auto results = resolver.resolve(ep.host, std::to_string(ep.port), c->ec);
  if (c->ec) throw EtcdUnreachable(fmt::format("cannot resolve: {}", c->ec.message()));
  if (tls_) c->tls.emplace(c->io, tls_->context());
  else c->plain.emplace(c->io);
  c->tcp().expires_after(opt_.op_timeout);
  c->tcp().async_connect(results, [&c = *c](beast::error_code e, const tcp::endpoint&) { c.ec = e; });
  step(*c, "connect");
  if (c->tls) {
    tls_->prepare(c->tls->native_handle(), ep.host);
    c->tls->async_handshake(asio::ssl::stream_base::client, [&c = *c](beast::error_code e) { c.ec = e; });
    step(*c, "TLS handshake");
  }
  return c;
}

std::string EtcdHttp::exchange(size_t member, const std::string& method, const std::string& path,
                               const std::string& body, const std::vector<std::string>& until, Duration wait) {
  const Endpoint& ep = opt_.endpoints[member];
  http::request<http::string_body> req{method == "GET" ? http::verb::get : http::verb::post, path, 11};
  req.set(http::field::host, ep.str());
  req.set(http::field::content_type, "application/json");
  if (!auth_token_.empty()) req.set(http::field::authorization, auth_token_);
  req.body() = body;
  req.prepare_payload();
  // A stream (a watch) holds its connection until it ends: it gets one of its own.
  std::unique_ptr<EtcdConnection> c;
  if (until.empty() && conn_ && conn_->member == member) c = std::move(conn_);
  std::pair<unsigned, std::string> reply;
  for (;;) {
    if (!c) c = connect(member);
    const auto on = [this, &c = *c](const char* name) { return step(c, name); };
    try {
      reply = c->tls ? etcd_round_trip(*c, *c->tls, on, req, until, opt_.op_timeout, wait)
                     : etcd_round_trip(*c, *c->plain, on, req, until, opt_.op_timeout, wait);
      break;
    } catch (const EtcdStaleConnection&) {
      c.reset();  // once: a new connection has answered nothing yet, so its failure is the member's
    }
  }
  if (until.empty() && c->answered) conn_ = std::move(c);
  auto& [status, out] = reply;
  if (status == 200) return std::move(out);
  json err = json::parse(out, nullptr, false);
  // Revoking a lease that already expired (gRPC's NotFound, 5) is what revoking it was for: a node
  // leaving after its lease ran out must not fail the job's end.
  if (path == "/v3/lease/revoke" && err.is_object() && err.value("code", 0) == 5) return "{}";
  const std::string msg = err.is_object() ? err.value("message", err.value("error", out)) : out;
  refuse_configuration(ep, path, msg);
  if (msg.find("auth token") != std::string::npos || (err.is_object() && err.value("code", 0) == 16)) throw EtcdAuthExpired{};
  if (status >= 500 || msg.find("no leader") != std::string::npos || msg.find("leader changed") != std::string::npos)
    throw EtcdUnreachable(fmt::format("HTTP {}: {}", status, msg));
  throw Error(
      fmt::format("etcd at {} refused {}: {}", ep.str(), path, msg),
      "check the etcd user's permissions on the job's prefix (/mtrain/rdzv/) and the etcd version (3.4 or newer)", 1);
}

void EtcdHttp::refuse_configuration(const Endpoint& ep, const std::string& path, const std::string& msg) const {
  const auto says = [&](const char* text) { return msg.find(text) != std::string::npos; };
  if (says("HTTP request to an HTTPS server"))
    throw Error(fmt::format("etcd member {} speaks TLS (https) and was spoken to in plain HTTP", ep.str()),
                "write https:// before every member of --rdzv-endpoint and give --rdzv-etcd-cacert the CA certificate "
                "that signed etcd's --cert-file");
  if (says("CommonName of client sending a request against gateway"))
    throw Error(fmt::format("etcd member {} refuses the client certificate --rdzv-etcd-cert '{}' because it has a "
                            "Common Name: with auth enabled, etcd's JSON gateway (which mtrain speaks) cannot pass a "
                            "certificate's name on as the etcd user",
                            ep.str(), opt_.tls_files.cert_file),
                "make the nodes' client certificate without a CN (openssl req -subj /O=mtrain …) and name the user "
                "with --rdzv-etcd-user");
  if (path == "/v3/auth/authenticate" && says("authentication failed"))
    throw Error(fmt::format("etcd at {} refused user '{}' with the password from {}: {}", ep.str(), opt_.username,
                            opt_.password_source.empty() ? "nowhere (none given)" : opt_.password_source, msg),
                fmt::format("check the user and its password (etcdctl user get {} / user passwd {})", opt_.username,
                            opt_.username));
  if (says("user name is empty"))
    throw Error(fmt::format("etcd at {} has authentication enabled and this node gave no user", ep.str()),
                "give --rdzv-etcd-user NAME and its password in the environment variable MTRAIN_ETCD_PASSWORD or a "
                "file named by --rdzv-etcd-password-file");
  if (says("permission denied"))
    throw Error(fmt::format("etcd at {} denied {} to user '{}': {}", ep.str(), path, opt_.username, msg),
                "grant the user's role read and write on the job's prefix: etcdctl role grant-permission ROLE "
                "--prefix=true readwrite /mtrain/");
}

void EtcdHttp::authenticate_locked(size_t member) {
  const Endpoint& ep = opt_.endpoints[member];
  auth_token_.clear();
  const std::string body = json{{"name", opt_.username}, {"password", opt_.password}}.dump();
  json reply;
  try {
    reply = json::parse(exchange(member, "POST", "/v3/auth/authenticate", body, {}, opt_.op_timeout));
  } catch (const Error& e) {
    // A user given to a cluster without auth: requests go without a token, as etcdctl's do.
    if (e.message().find("authentication is not enabled") == std::string::npos) throw;
    auth_not_enabled_ = true;
    return;
  }
  auth_token_ = reply.value("token", "");
  if (auth_token_.empty())
    throw Error(fmt::format("etcd at {} did not authenticate user '{}'", ep.str(), opt_.username),
                "check the etcd user and password given for the rendezvous", 1);
}

json EtcdHttp::call_streaming(const std::string& path, const json& body, const std::vector<std::string>& until,
                              Duration wait, bool* timed_out) {
  std::lock_guard lock(mu_);
  std::vector<std::string> failures;
  const std::string text = body.dump();
  for (size_t k = 0; k < opt_.endpoints.size(); ++k) {
    const size_t i = (preferred_ + k) % opt_.endpoints.size();
    const Endpoint& ep = opt_.endpoints[i];
    try {
      for (int attempt = 0;; ++attempt) {
        try {
          if (!opt_.username.empty() && auth_token_.empty() && !auth_not_enabled_) authenticate_locked(i);
          std::string reply = exchange(i, path == "/version" ? "GET" : "POST", path, text, until, wait);
          preferred_ = i;
          return until.empty() ? json::parse(reply) : etcd_first_message(reply, until);
        } catch (const EtcdAuthExpired&) {
          if (attempt > 0 || opt_.username.empty())
            throw Error(fmt::format("etcd at {} refused the rendezvous' credentials", ep.str()),
                        "give --rdzv-etcd-user and its password (MTRAIN_ETCD_PASSWORD or --rdzv-etcd-password-file)",
                        1);
          auth_token_.clear();
        }
      }
    } catch (const EtcdStreamIdle&) {
      preferred_ = i;
      if (timed_out) *timed_out = true;
      return json::object();
    } catch (const EtcdUnreachable& e) {
      failures.push_back(fmt::format("{}: {}", ep.str(), e.what()));
      auth_token_.clear();  // tokens are per member unless etcd uses JWT
    } catch (const json::exception& e) {
      failures.push_back(fmt::format("{}: malformed reply ({})", ep.str(), e.what()));
    }
  }
  std::string all;
  for (const auto& f : failures) all += (all.empty() ? "" : "; ") + f;
  throw Error(fmt::format("no member of the etcd cluster answered {}: {}", path, all),
              "the rendezvous is kept in etcd: check that its members run and are reachable from this node "
              "(etcdctl --endpoints … endpoint health)",
              1);
}

json EtcdHttp::call(const std::string& path, const json& body) {
  return call_streaming(path, body, {}, opt_.op_timeout, nullptr);
}

json EtcdHttp::version() { return call("/version", json::object()); }

RangeResult EtcdHttp::range_prefix(const std::string& prefix) {
  json r = call("/v3/kv/range", {{"key", etcd_b64(prefix)}, {"range_end", etcd_b64(etcd_prefix_end(prefix))}});
  RangeResult out;
  out.revision = etcd_i64(r.value("header", json::object()), "revision");
  for (const auto& kv : r.value("kvs", json::array())) out.kvs.push_back(etcd_kv_of(kv));
  return out;
}

RangeResult EtcdHttp::first_created(const std::string& prefix, int64_t limit) {
  json r = call("/v3/kv/range", {{"key", etcd_b64(prefix)},
                                 {"range_end", etcd_b64(etcd_prefix_end(prefix))},
                                 {"limit", std::to_string(limit)},
                                 {"sort_order", "ASCEND"},
                                 {"sort_target", "CREATE"}});
  RangeResult out;
  out.revision = etcd_i64(r.value("header", json::object()), "revision");
  for (const auto& kv : r.value("kvs", json::array())) out.kvs.push_back(etcd_kv_of(kv));
  return out;
}

TxnResult EtcdHttp::txn(const std::vector<TxnCompare>& compare, const std::vector<TxnOp>& success,
                        const std::vector<TxnOp>& failure) {
  const auto ops = [](const std::vector<TxnOp>& branch) {
    json out = json::array();
    for (const auto& op : branch) {
      if (op.put) {
        out.push_back({{"request_put", etcd_put_request(op.range.key, op.value, op.lease)}});
        continue;
      }
      json range = {{"key", etcd_b64(op.range.key)}};
      if (op.range.prefix) range["range_end"] = etcd_b64(etcd_prefix_end(op.range.key));
      if (op.range.count_only) range["count_only"] = true;
      // A read-only transaction all of whose reads are serializable is answered by the member
      // alone; one linearizable read makes the whole transaction wait for the leader's word.
      if (op.range.serializable) range["serializable"] = true;
      out.push_back({{"request_range", range}});
    }
    return out;
  };
  json cmp = json::array();
  for (const auto& c : compare) {
    json one = {{"key", etcd_b64(c.key)}, {"result", "EQUAL"}};
    switch (c.target) {
      case TxnCompare::Target::value: one.update({{"target", "VALUE"}, {"value", etcd_b64(c.value)}}); break;
      case TxnCompare::Target::mod_revision:
        one.update({{"target", "MOD"}, {"mod_revision", std::to_string(c.revision)}});
        break;
      case TxnCompare::Target::create_revision:
        one.update({{"target", "CREATE"}, {"create_revision", std::to_string(c.revision)}});
        break;
    }
    cmp.push_back(std::move(one));
  }
  json body = {{"success", ops(success)}};
  if (!cmp.empty()) body["compare"] = std::move(cmp);
  if (!failure.empty()) body["failure"] = ops(failure);
  json r = call("/v3/kv/txn", body);
  TxnResult out;
  out.succeeded = r.value("succeeded", false);
  out.revision = etcd_i64(r.value("header", json::object()), "revision");
  for (const auto& resp : r.value("responses", json::array())) {
    auto rr = resp.find("response_range");
    if (rr == resp.end()) continue;
    RangeResult one;
    one.revision = out.revision;
    one.count = etcd_i64(*rr, "count");
    for (const auto& kv : rr->value("kvs", json::array())) one.kvs.push_back(etcd_kv_of(kv));
    out.reads.push_back(std::move(one));
  }
  const auto& branch = compare.empty() || out.succeeded ? success : failure;
  const auto wanted =
      static_cast<size_t>(std::count_if(branch.begin(), branch.end(), [](const TxnOp& op) { return !op.put; }));
  if (out.reads.size() != wanted)
    throw Error(fmt::format("etcd answered {} of {} reads of one transaction", out.reads.size(), wanted), {}, 1);
  return out;
}

void EtcdHttp::erase(const std::string& key) { call("/v3/kv/deleterange", {{"key", etcd_b64(key)}}); }

std::optional<KeyValue> EtcdHttp::get(const std::string& key) {
  json r = call("/v3/kv/range", {{"key", etcd_b64(key)}});
  auto kvs = r.value("kvs", json::array());
  if (kvs.empty()) return std::nullopt;
  return etcd_kv_of(kvs[0]);
}

std::optional<KeyValue> EtcdHttp::create(const std::string& key, const std::string& value, int64_t lease) {
  json r = call("/v3/kv/txn", {{"compare", {{{"target", "CREATE"}, {"key", etcd_b64(key)}, {"result", "EQUAL"}, {"create_revision", "0"}}}},
                               {"success", {{{"request_put", etcd_put_request(key, value, lease)}}}},
                               {"failure", {{{"request_range", {{"key", etcd_b64(key)}}}}}}});
  if (r.value("succeeded", false)) return std::nullopt;
  for (const auto& resp : r.value("responses", json::array())) {
    auto kvs = resp.value("response_range", json::object()).value("kvs", json::array());
    if (!kvs.empty()) return etcd_kv_of(kvs[0]);
  }
  // Deleted between the compare and the range: etcd's txn is atomic, so this cannot happen.
  throw Error(fmt::format("etcd: key {} neither created nor found", key), {}, 1);
}

bool EtcdHttp::compare_and_put(const std::string& key, int64_t mod_revision, const std::string& value) {
  json r = call("/v3/kv/txn",
                {{"compare", {{{"target", "MOD"}, {"key", etcd_b64(key)}, {"result", "EQUAL"}, {"mod_revision", std::to_string(mod_revision)}}}},
                 {"success", {{{"request_put", etcd_put_request(key, value, 0)}}}}});
  return r.value("succeeded", false);
}

void EtcdHttp::put(const std::string& key, const std::string& value, int64_t lease) {
  call("/v3/kv/put", etcd_put_request(key, value, lease));
}

void EtcdHttp::delete_prefix(const std::string& prefix) {
  call("/v3/kv/deleterange", {{"key", etcd_b64(prefix)}, {"range_end", etcd_b64(etcd_prefix_end(prefix))}});
}

int64_t EtcdHttp::grant_lease(Duration ttl) {
  const auto seconds = std::max<int64_t>(1, (ttl.count() + 999) / 1000);
  json r = call("/v3/lease/grant", {{"TTL", std::to_string(seconds)}});
  if (!r.value("error", "").empty())
    throw Error(fmt::format("etcd refused a lease: {}", r.value("error", "")), {}, 1);
  return etcd_i64(r, "ID");
}

bool EtcdHttp::keep_alive(int64_t lease) {
  // A client stream of one message: the gateway closes it once the body has been read, etcd
  // answers and ends the stream, so the reply is whole and the connection kept for the next call.
  json r = call("/v3/lease/keepalive", {{"ID", std::to_string(lease)}});
  return etcd_i64(r.value("result", json::object()), "TTL") > 0;
}

void EtcdHttp::revoke(int64_t lease) { call("/v3/lease/revoke", {{"ID", std::to_string(lease)}}); }

WatchResult EtcdHttp::watch_prefix(const std::string& prefix, int64_t from_revision, Duration timeout) {
  bool idle = false;
  json create = {{"key", etcd_b64(prefix)}, {"range_end", etcd_b64(etcd_prefix_end(prefix))}, {"start_revision", std::to_string(from_revision)}};
  // The first message only confirms the watch; "events" is the change. A start revision etcd has
  // compacted away is answered with "canceled" (and the compact revision) and nothing more: that
  // ends the wait too, and the caller reads the current state.
  json m = call_streaming("/v3/watch", {{"create_request", create}}, {"\"events\"", "\"canceled\""}, timeout, &idle);
  WatchResult out;
  out.changed = !idle;
  for (const auto& ev : m.value("result", json::object()).value("events", json::array()))
    if (ev.value("type", "PUT") == "PUT" && ev.contains("kv")) out.puts.push_back(etcd_kv_of(ev["kv"]));
  return out;
}

}  // namespace mtrain::rendezvous
