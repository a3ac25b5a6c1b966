#include "lib/mlflow/http_client.hpp"

#include <optional>
#include <stdexcept>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

namespace mtrain::mlflow {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;

std::string parse_http_url(const std::string& text, HttpUrl& url) {
  const std::string scheme = "http://";
  if (text.rfind("https://", 0) == 0) return "https is not supported (no TLS library is linked); use an http:// URI";
  if (text.rfind(scheme, 0) != 0) return "not an http:// URI";
  std::string rest = text.substr(scheme.size());
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (authority.find('@') != std::string::npos) return "credentials in the URI are not supported";
  HttpUrl u;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string::npos) return "an unclosed '[' in the host";
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return "text after the host";
      u.port = authority.substr(close + 2);
    }
  } else if (const size_t colon = authority.rfind(':'); colon != std::string::npos) {
    u.host = authority.substr(0, colon);
    u.port = authority.substr(colon + 1);
  } else {
    u.host = authority;
  }
  if (u.host.empty()) return "no host";
  if (u.port.empty() || u.port.size() > 5 || u.port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(u.port) == 0 || std::stoi(u.port) > 65535) {
    return "the port is not a number from 1 to 65535";
  }
  u.base_path = path;
  url = u;
  return "";
}

namespace {

template <class Body>
void prepare(http::request<Body>& r, const HttpUrl& url, const HttpRequest& req) {
  r.method(http::string_to_verb(req.method));
  r.target(url.base_path + req.target);
  r.version(11);
  r.set(http::field::host, url.host + ":" + url.port);
  r.set(http::field::user_agent, "mtrain");
  r.set(http::field::content_type, req.content_type);
  r.set(http::field::connection, "close");
}

// Runs the exchange on its own io_context; the stream's expiry ends every pending operation at
// the deadline, so run() returns by then whatever the server does.
template <class Body>
HttpResponse exchange(const HttpUrl& url, const HttpRequest& req, http::request<Body>& r) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  asio::ip::tcp::resolver resolver(io);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(req.max_response);
  beast::error_code failure;
  std::string stage = "resolving the host";  // what was under way when it failed or timed out
  stream.expires_after(req.timeout);
  resolver.async_resolve(url.host, url.port, [&](beast::error_code ec, asio::ip::tcp::resolver::results_type res) {
    if (ec) return void(failure = ec);
    stage = "connecting";
    stream.async_connect(res, [&](beast::error_code ec2, const asio::ip::tcp::endpoint&) {
      if (ec2) return void(failure = ec2);
      stage = "sending";
      http::async_write(stream, r, [&](beast::error_code ec3, size_t) {
        if (ec3) return void(failure = ec3);
        stage = "reading the answer";
        http::async_read(stream, buffer, parser, [&](beast::error_code ec4, size_t) {
          if (ec4) return void(failure = ec4);
          stage.clear();
        });
      });
    });
  });
  // The resolver has no expiry of its own; the whole exchange gets one more timeout at most.
  io.run_for(req.timeout * 2);
  if (!stage.empty()) {
    const bool timed_out = !failure || failure == beast::error::timeout;
    throw std::runtime_error(timed_out ? fmt::format("{}: no answer within {:g} s", stage, req.timeout.count() / 1000.0)
                                       : stage + ": " + failure.message());
  }
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  return {static_cast<int>(parser.get().result_int()), parser.get().body()};
}

}  // namespace

HttpResponse http_request(const HttpUrl& url, const HttpRequest& req) {
  if (!req.body_file.empty()) {
    http::request<http::file_body> r;
    prepare(r, url, req);
    beast::error_code ec;
    r.body().open(req.body_file.c_str(), beast::file_mode::scan, ec);
    if (ec) throw std::runtime_error("opening " + req.body_file + ": " + ec.message());
    r.prepare_payload();
    return exchange(url, req, r);
  }
  http::request<http::string_body> r;
  prepare(r, url, req);
  r.body() = req.body;
  r.prepare_payload();
  return exchange(url, req, r);
}

}  // namespace mtrain::mlflow
