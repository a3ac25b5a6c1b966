#pragma once
// One HTTP/1.1 request over Boost.Beast with a deadline on the whole exchange (connect, send,
// receive): what the MLflow client needs from a tracking server, and no more. Plain http only;
// an https URI is refused when the job is read (no TLS library is linked).
#include <chrono>
#include <cstdint>
#include <string>

namespace mtrain::mlflow {

struct HttpUrl {
  std::string host;
  std::string port = "80";
  std::string base_path;  // without a trailing '/': "" or "/mlflow"
};

// "http://host[:port][/path]". Returns "" and fills `url`, or the problem in words.
std::string parse_http_url(const std::string& text, HttpUrl& url);

struct HttpResponse {
  int status = 0;
  std::string body;
};

struct HttpRequest {
  std::string method = "GET";  // GET, POST, PUT
  std::string target;  // path and query, appended to the URL's base path
  std::string body;  // ignored when body_file is set
  std::string body_file;  // PUT a file, streamed from disk
  std::string content_type = "application/json";
  std::chrono::milliseconds timeout{10000};
  uint64_t max_response = 1 << 20;  // a larger answer is an error, not a larger buffer
};

// Throws std::runtime_error (connection refused, deadline passed, answer too large); an HTTP
// error status is returned, not thrown.
HttpResponse http_request(const HttpUrl& url, const HttpRequest& req);

}  // namespace mtrain::mlflow
