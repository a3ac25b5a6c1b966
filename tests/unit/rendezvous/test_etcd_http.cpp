#include <catch2/catch.hpp>

#include <sstream>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "lib/core/error.hpp"
#include "lib/rendezvous/etcd_http.hpp"

using namespace mtrain::rendezvous;

namespace {

// A gateway that answers each connection's one request with the next of `replies` (status, body)
// and records what was asked: "target auth".
struct ScriptedGateway {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor{io, {boost::asio::ip::make_address("127.0.0.1"), 0}};
  std::vector<std::string> seen;
  std::thread thread;
  explicit ScriptedGateway(std::vector<std::pair<unsigned, std::string>> replies) {
    thread = std::thread([this, replies] {
      namespace http = boost::beast::http;
      for (const auto& [status, body] : replies) {
        boost::asio::ip::tcp::socket s(io);
        acceptor.accept(s);
        boost::beast::flat_buffer buf;
        http::request<http::string_body> req;
        http::read(s, buf, req);
        seen.push_back(std::string(req.target()) + " " + std::string(req[http::field::authorization]));
        http::response<http::string_body> res{static_cast<http::status>(status), 11};
        res.set(http::field::content_type, "application/json");
        res.body() = body;
        res.prepare_payload();
        http::write(s, res);
      }
    });
  }
  ~ScriptedGateway() { finish(); }
  std::vector<std::string> finish() {
    if (thread.joinable()) thread.join();
    return seen;
  }
  uint16_t port() const { return acceptor.local_endpoint().port(); }
};

}  // namespace

TEST_CASE("etcd endpoint lists: default port, schemes, IPv6", "[etcd_http]") {
  auto eps = parse_etcd_endpoints("a:2381,b,http://c:2390,[::1]:2400,[::1]");
  REQUIRE(eps.size() == 5);
  CHECK(eps[0].str() == "a:2381");
  CHECK(eps[1].str() == "b:2379");
  CHECK(eps[2].str() == "c:2390");
  CHECK(eps[3].str() == "[::1]:2400");
  CHECK(eps[4].str() == "[::1]:2379");
  CHECK_THROWS_AS(parse_etcd_endpoints("a:2379,,b"), mtrain::Error);
  CHECK_FALSE(parse_etcd_members("a,http://b").https);
  const auto tls = parse_etcd_members("https://a:2381,https://[::1]");
  CHECK(tls.https);
  CHECK(tls.endpoints[1].str() == "[::1]:2379");
  CHECK_THROWS_AS(parse_etcd_members("https://a,b"), mtrain::Error);
}

TEST_CASE("a cluster none of whose members answers is one error naming every member", "[etcd_http]") {
  // Two ports that were just free: connections are refused at once.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a1(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  boost::asio::ip::tcp::acceptor a2(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const auto p1 = a1.local_endpoint().port(), p2 = a2.local_endpoint().port();
  a1.close();
  a2.close();
  EtcdOptions o;
  o.endpoints = parse_etcd_endpoints("127.0.0.1:" + std::to_string(p1) + ",127.0.0.1:" + std::to_string(p2));
  o.op_timeout = Duration(500);
  EtcdHttp kv(o);
  try {
    kv.range_prefix("/x/");
    FAIL("no error");
  } catch (const mtrain::Error& e) {
    const std::string what = e.what();
    CHECK(what.find("no member of the etcd cluster answered") != std::string::npos);
    CHECK(what.find(std::to_string(p1)) != std::string::npos);
    CHECK(what.find(std::to_string(p2)) != std::string::npos);
    CHECK(e.exit_code() == 1);
  }
}

TEST_CASE("a member that accepts but never answers times out within the op timeout", "[etcd_http]") {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  EtcdOptions o;
  o.endpoints = {Endpoint{"127.0.0.1", silent.local_endpoint().port()}};
  o.op_timeout = Duration(300);
  EtcdHttp kv(o);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(kv.get("/k"), mtrain::Error);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
}

TEST_CASE("a watch event that arrives in two pieces is read whole", "[etcd_http]") {
  // The gateway streams one JSON message per line; a large event (the round's signed agreement)
  // can reach the client in several reads. The first piece already holds "events".
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::acceptor gateway(io, {asio::ip::make_address("127.0.0.1"), 0});
  const std::string value(600, 'A');  // base64 text, as etcd sends values
  std::thread server([&] {
    asio::ip::tcp::socket s(io);
    gateway.accept(s);
    asio::streambuf req;
    asio::read_until(s, req, "\r\n\r\n");
    auto chunk = [&](const std::string& data) {
      std::ostringstream c;
      c << std::hex << data.size() << "\r\n" << data << "\r\n";
      asio::write(s, asio::buffer(c.str()));
    };
    asio::write(s, asio::buffer(std::string(
                       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")));
    chunk("{\"result\":{\"header\":{\"revision\":\"7\"},\"created\":true}}\n");
    const std::string event =
        "{\"result\":{\"header\":{\"revision\":\"8\"},\"events\":[{\"kv\":{\"key\":\"L3gv\",\"value\":\"" + value +
        "\"}}]}}\n";
    chunk(event.substr(0, 200));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    chunk(event.substr(200));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  });
  EtcdOptions o;
  o.endpoints = {Endpoint{"127.0.0.1", gateway.local_endpoint().port()}};
  o.op_timeout = Duration(2000);
  EtcdHttp kv(o);
  WatchResult w;
  CHECK_NOTHROW(w = kv.watch_prefix("/x/", 8, Duration(2000)));
  CHECK(w.changed);
  // The event carries the key's value: a waiter for it reads nothing more.
  REQUIRE(w.puts.size() == 1);
  CHECK(w.puts[0].key == "/x/");
  CHECK(w.puts[0].value.size() == 450);
  server.join();
}

TEST_CASE("a watch from a compacted revision ends at once, so the caller reads the current state", "[etcd_http]") {
  // etcd answers a watch whose start revision it has compacted away with one message, "canceled"
  // and the compact revision, and then nothing: waiting for "events" waited out the whole timeout.
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::acceptor gateway(io, {asio::ip::make_address("127.0.0.1"), 0});
  std::thread server([&] {
    asio::ip::tcp::socket s(io);
    gateway.accept(s);
    asio::streambuf req;
    asio::read_until(s, req, "\r\n\r\n");
    const std::string msg =
        "{\"result\":{\"header\":{\"revision\":\"90\"},\"compact_revision\":\"50\",\"canceled\":true}}\n";
    std::ostringstream c;
    c << "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
      << std::hex << msg.size() << "\r\n"
      << msg << "\r\n";
    asio::write(s, asio::buffer(c.str()));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the stream stays open, silent
  });
  EtcdOptions o;
  o.endpoints = {Endpoint{"127.0.0.1", gateway.local_endpoint().port()}};
  EtcdHttp kv(o);
  const auto t0 = std::chrono::steady_clock::now();
  WatchResult w;
  CHECK_NOTHROW(w = kv.watch_prefix("/x/", 10, Duration(5000)));
  CHECK(w.changed);
  CHECK(w.puts.empty());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1000));
  server.join();
}

TEST_CASE("requests to one member share one kept-open connection", "[etcd_http]") {
  // A new connection per request cost etcd an accept, a goroutine and (with TLS) a handshake each.
  namespace asio = boost::asio;
  namespace http = boost::beast::http;
  asio::io_context io;
  asio::ip::tcp::acceptor gateway(io, {asio::ip::make_address("127.0.0.1"), 0});
  int served = 0;
  std::thread server([&] {
    asio::ip::tcp::socket s(io);
    gateway.accept(s);  // one connection only: a second one would never be answered
    boost::beast::flat_buffer buf;
    boost::beast::error_code ec;
    for (; served < 3; ++served) {
      http::request<http::string_body> req;
      http::read(s, buf, req, ec);
      if (ec) return;  // the client closed this connection
      http::response<http::string_body> res{http::status::ok, 11};
      res.set(http::field::content_type, "application/json");
      res.body() = R"({"header":{"revision":"5"},"kvs":[],"result":{"TTL":"9"}})";
      res.prepare_payload();
      http::write(s, res, ec);
    }
  });
  EtcdOptions o;
  o.endpoints = {Endpoint{"127.0.0.1", gateway.local_endpoint().port()}};
  o.op_timeout = Duration(1000);
  EtcdHttp kv(o);
  CHECK(kv.range_prefix("/x/").revision == 5);
  CHECK(kv.keep_alive(7));
  CHECK_FALSE(kv.get("/x/k").has_value());
  server.join();
  CHECK(served == 3);
}

TEST_CASE("an expired auth token is renewed and the request repeated", "[etcd_http]") {
  // etcd's simple tokens expire after --auth-token-ttl unused (and belong to one member).
  ScriptedGateway gw({{200, R"({"token":"t1"})"},
                      {401, R"({"code":16,"message":"etcdserver: invalid auth token"})"},
                      {200, R"({"token":"t2"})"},
                      {200, R"({"header":{"revision":"5"},"kvs":[]})"}});
  EtcdOptions o;
  o.endpoints = {Endpoint{"127.0.0.1", gw.port()}};
  o.username = "mt";
  o.password = "pw";
  EtcdHttp kv(o);
  CHECK(kv.range_prefix("/x/").revision == 5);
  CHECK(gw.finish() == std::vector<std::string>{"/v3/auth/authenticate ", "/v3/kv/range t1", "/v3/auth/authenticate ",
                                                "/v3/kv/range t2"});
}

TEST_CASE("a wrong password is refused at once with exit 2, naming the user and where the password came from",
          "[etcd_http]") {
  // Not "no member answered" after trying the others: every member would say the same.
  ScriptedGateway gw(
      {{400, R"({"code":3,"message":"etcdserver: authentication failed, invalid user ID or password"})"}});
  EtcdOptions o;
  o.endpoints = {Endpoint{"127.0.0.1", gw.port()}};
  o.username = "mt";
  o.password = "wrong";
  o.password_source = "MTRAIN_ETCD_PASSWORD";
  EtcdHttp kv(o);
  try {
    kv.get("/k");
    FAIL("no error");
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == 2);
    CHECK(e.message().find("refused user 'mt' with the password from MTRAIN_ETCD_PASSWORD") != std::string::npos);
  }
  CHECK(gw.finish().size() == 1);
}

TEST_CASE("a TLS member spoken to in plain HTTP is refused with exit 2", "[etcd_http]") {
  ScriptedGateway gw({{400, "Client sent an HTTP request to an HTTPS server.\n"}});
  EtcdOptions o;
  o.endpoints = {Endpoint{"127.0.0.1", gw.port()}};
  EtcdHttp kv(o);
  try {
    kv.get("/k");
    FAIL("no error");
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == 2);
    CHECK(e.message().find("speaks TLS (https)") != std::string::npos);
  }
  gw.finish();
}
