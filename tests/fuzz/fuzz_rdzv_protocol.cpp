// The rendezvous store protocol, as the server and the agents' client see peer bytes:
//  1. the whole input as a TCP byte stream: frames (magic, length, payload) decoded one after
//     another until the bytes run out — only FrameError may come out;
//  2. the input as lines, each a request payload to one Store (with a manual clock): a line
//     starting with '+' advances the clock by its digits × 100 ms instead. Every request must
//     get a reply that is a JSON object with a boolean "ok", that encodes back into a valid
//     frame, and whose "assignment", when present, reads back (what the client does with it).
// Seeds carry the store's token (kToken) so the fuzzer reaches the states behind it.
#include <array>
#include <cstring>

#include "fuzz_common.hpp"
#include "lib/rendezvous/assignment.hpp"
#include "lib/rendezvous/clock.hpp"
#include "lib/rendezvous/frame.hpp"
#include "lib/rendezvous/store.hpp"

namespace {
using namespace mtrain::rendezvous;
constexpr const char* kToken = "fuzz-token-0123456789abcdef";

void as_stream(const std::string& bytes) {
  size_t at = 0;
  while (bytes.size() - at >= kFrameHeaderBytes) {
    std::array<unsigned char, kFrameHeaderBytes> h;
    std::memcpy(h.data(), bytes.data() + at, h.size());
    at += h.size();
    size_t n = 0;
    try {
      n = decode_header(h, kDefaultMaxFrameBytes);
    } catch (const FrameError&) {
      return;  // the server closes the connection
    }
    FUZZ_CHECK(n > 0 && n <= kDefaultMaxFrameBytes);
    if (bytes.size() - at < n) return;  // the server would wait, then time out
    try {
      auto j = decode_payload(bytes.substr(at, n));
      FUZZ_CHECK(j.is_object());
    } catch (const FrameError&) {
      return;
    }
    at += n;
  }
}

void check_reply(const nlohmann::json& body) {
  FUZZ_CHECK(body.is_object());
  FUZZ_CHECK(body.contains("ok") && body["ok"].is_boolean());
  std::string frame = encode_frame(body);
  std::array<unsigned char, kFrameHeaderBytes> h;
  std::memcpy(h.data(), frame.data(), h.size());
  size_t n = decode_header(h, frame.size());  // no FrameError for our own replies
  FUZZ_CHECK(n == frame.size() - kFrameHeaderBytes);
  auto back = decode_payload(frame.substr(kFrameHeaderBytes));
  FUZZ_CHECK(back.is_object());
  if (body.contains("assignment")) {
    NodeAssignment a = node_assignment_from_json(body["assignment"]);
    FUZZ_CHECK(a.world_size >= 1);
    FUZZ_CHECK(a.self.node_rank >= 0 && a.self.node_rank < a.nnodes);
    FUZZ_CHECK(body.value("node_rank", -1) == a.self.node_rank);
    FUZZ_CHECK(a.self.first_rank >= 0 && a.self.local_world_size >= 1);
    FUZZ_CHECK(a.self.first_rank + a.self.local_world_size <= a.world_size);
  }
}

void as_requests(const std::string& text) {
  ManualClock clock;
  StoreOptions opt;
  opt.min_nodes = 1;
  opt.max_nodes = 3;
  opt.join_timeout = Duration(60000);
  opt.last_call = Duration(2000);
  opt.heartbeat_timeout = Duration(3000);
  opt.token = kToken;
  opt.run_id = "fuzz";
  if (!text.empty() && text[0] == 'E') opt.expected_hosts = {"worker-0", "worker-1"}, opt.min_nodes = 2;
  Store store(opt, clock);
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(start, nl - start);
    start = nl + 1;
    if (!line.empty() && line[0] == '+') {
      long ms = 0;
      for (size_t i = 1; i < line.size() && i < 6 && std::isdigit(static_cast<unsigned char>(line[i])); ++i)
        ms = ms * 10 + (line[i] - '0');
      clock.advance(Duration(ms * 100));
      store.tick();
      continue;
    }
    nlohmann::json req;
    try {
      req = decode_payload(line);
    } catch (const FrameError&) {
      continue;
    }
    // Whatever a server-side peer sends, a client must survive reading it as an assignment.
    try {
      node_assignment_from_json(req);
    } catch (const FrameError&) {
    }
    Reply r = store.handle(req);  // must not throw: the server's catch is only a safety net
    check_reply(r.body);
    StoreStatus st = store.status();
    FUZZ_CHECK(!st.progress.empty());
    if (st.phase == Phase::failed) FUZZ_CHECK(!st.reason.empty());
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in = mtrain::fuzz::text(data, size);
  as_stream(in);
  as_requests(in);
  return 0;
}
