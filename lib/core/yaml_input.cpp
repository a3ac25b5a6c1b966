#include "lib/core/yaml_input.hpp"

#include <algorithm>
#include <istream>
#include <streambuf>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/depthguard.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain {

namespace {

struct Budget {
  const std::string& origin;
  const InputLimits& lim;
  size_t nodes = 0;
  bool aliases = false;  // the text uses aliases: name them in the refusal

  void walk(const YAML::Node& n, int depth) {
    if (depth > lim.max_depth) throw input_too_deep(origin, lim);
    if (++nodes > lim.max_nodes) throw input_too_many_nodes(origin, aliases, lim);
    if (n.IsMap()) {
      for (auto it = n.begin(); it != n.end(); ++it) {
        walk(it->first, depth + 1);
        walk(it->second, depth + 1);
      }
    } else if (n.IsSequence()) {
      for (auto it = n.begin(); it != n.end(); ++it) walk(*it, depth + 1);
    }
  }
};

// The limits while parsing, before any node exists (issue 40 item 8). YAML::Load builds the whole
// tree first, about 500 bytes a node (4 MiB of "- a" lines: 500 MB), and its scanner queues every
// token of a flow collection that could still turn out to be a mapping key until the collection
// closes, ~230 bytes a token: 16 MiB of `[` peaked at 3.9 GB before any check could run. So, in
// order, each bounded by the text and a few MiB:
//   1. flow_depth_scan: the nesting of [ ] { } in the text, before yaml-cpp sees it;
//   2. the parser's events (YAML::Parser, no tree) through ParseGuard: block nesting and the
//      number of values (before alias expansion), and, as a backstop for whatever the text scan
//      misreads, how far the scanner has read past the last value it reported;
//   3. YAML::Load, then Budget's walk (values after alias expansion).

// Where a limit was passed: 0-based, as yaml-cpp's Mark.
struct LimitAt {
  enum Kind { Depth, Nodes, Lookahead } kind;
  int line, column;
};

// The position of byte `at` (0-based line and column).
LimitAt limit_at(LimitAt::Kind kind, const std::string& text, size_t at) {
  int line = 0, column = 0;
  for (size_t i = 0; i < at && i < text.size(); ++i) text[i] == '\n' ? (++line, column = 0) : ++column;
  return {kind, line, column};
}

// The flow nesting as yaml-cpp's scanner reads it: inside a flow collection every bracket, brace
// and comma is an indicator; outside one, `[` and `{` open a collection only where a token starts
// (after a space, a line start, or "- ", ": "), not inside a plain value like `a[0`. Quoted values
// (starting where a token starts) and comments are skipped. Throws LimitAt past max_depth.
void flow_depth_scan(const std::string& text, int max_depth) {
  int depth = 0;
  const size_t n = text.size();
  auto token_start = [&](size_t i) {
    if (i == 0) return true;
    const char p = text[i - 1];
    return p == ' ' || p == '\t' || p == '\n' || p == '\r' || (depth > 0 && (p == '[' || p == '{' || p == ',' || p == ':'));
  };
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if ((c == '"' || c == '\'') && token_start(i)) {
      for (++i; i < n; ++i) {
        if (c == '"' && text[i] == '\\') {
          ++i;
        } else if (text[i] == c) {
          if (c == '\'' && i + 1 < n && text[i + 1] == '\'') ++i;  // '' inside '…'
          else break;
        }
      }
    } else if (c == '#' && token_start(i)) {
      while (i < n && text[i] != '\n') ++i;
    } else if ((c == '[' || c == '{') && (depth > 0 || token_start(i))) {
      if (++depth > max_depth) throw limit_at(LimitAt::Depth, text, i);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

// The scanner may read ahead of the last value it reported by a value's own length (a long
// string) and a little more; 256 KiB more is a flow collection whose tokens it is queueing
// (≤ 60 MB of tokens), far beyond any configuration's.
constexpr size_t kMaxLookahead = 256u << 10;

// Hands the text to yaml-cpp in pieces, and no further than kMaxLookahead past the last value the
// parser reported (ParseGuard moves that mark): beyond it the scanner sees the end of the text,
// its parse stops, and check_while_parsing reports the cut.
class GuardedInput : public std::streambuf {
 public:
  explicit GuardedInput(const std::string& text) : text_(text) {}
  void value_seen(size_t end) {
    last_value_ = std::max(last_value_, end);
    allowed_ = std::max(allowed_, end + kMaxLookahead);
  }
  bool cut() const { return cut_; }
  size_t last_value() const { return last_value_; }

 protected:
  int_type underflow() override {
    if (at_ >= text_.size()) return traits_type::eof();
    if (at_ >= allowed_) {
      cut_ = true;
      return traits_type::eof();
    }
    const size_t k = std::min<size_t>({4096, text_.size() - at_, allowed_ - at_});
    char* b = const_cast<char*>(text_.data()) + at_;
    setg(b, b, b + k);
    at_ += k;
    return traits_type::to_int_type(*b);
  }

 private:
  const std::string& text_;
  size_t at_ = 0;
  size_t allowed_ = kMaxLookahead;
  size_t last_value_ = 0;
  bool cut_ = false;
};

class ParseGuard : public YAML::EventHandler {
 public:
  ParseGuard(const InputLimits& lim, GuardedInput& in) : lim_(lim), in_(in) {}
  void OnDocumentStart(const YAML::Mark& m) override { value(m, 0, false); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { value(m, 0, true); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { value(m, 0, true); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string& v) override {
    value(m, v.size(), true);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    enter(m);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    enter(m);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void enter(const YAML::Mark& m) {
    value(m, 0, true);
    if (++depth_ > lim_.max_depth) throw LimitAt{LimitAt::Depth, m.line, m.column};
  }
  void value(const YAML::Mark& m, size_t length, bool counts) {
    if (counts && ++nodes_ > lim_.max_nodes) throw LimitAt{LimitAt::Nodes, m.line, m.column};
    in_.value_seen(static_cast<size_t>(std::max(m.pos, 0)) + length);
  }
  const InputLimits& lim_;
  GuardedInput& in_;
  int depth_ = 0;
  size_t nodes_ = 0;
};

// 1 and 2 above, over the first document (YAML::Load reads only the first).
void check_while_parsing(const std::string& text, const InputLimits& lim) {
  flow_depth_scan(text, lim.max_depth);
  GuardedInput buf(text);
  std::istream in(&buf);
  YAML::Parser parser(in);
  ParseGuard guard(lim, buf);
  try {
    parser.HandleNextDocument(guard);
  } catch (const YAML::ParserException&) {
    if (!buf.cut()) throw;  // the text's own error; a cut text's errors are the cut's
  }
  if (buf.cut()) throw limit_at(LimitAt::Lookahead, text, buf.last_value());
}

YamlProblem limit_problem(const LimitAt& at, const std::string& origin, const InputLimits& lim) {
  const Error e = at.kind == LimitAt::Depth   ? input_too_deep(origin, lim)
                  : at.kind == LimitAt::Nodes ? input_too_many_nodes(origin, false, lim)
                                              : Error(fmt::format("{}: more than {} KiB without a value the parser can "
                                                                  "take (a flow collection [...] or {{...}}, or one value, "
                                                                  "that long); not reading it", origin, kMaxLookahead >> 10),
                                                      "Configuration values are short: check that this is the file you "
                                                      "meant, and write long lists as block sequences, one \"- item\" a line.");
  const std::string& m = e.message();
  return {at.line + 1, at.column + 1, str::starts_with(m, origin + ": ") ? m.substr(origin.size() + 2) : m, e.hint()};
}

YamlDocument failed(YamlProblem p) {
  YamlDocument d;
  d.problem = std::move(p);
  return d;
}

}  // namespace

YamlDocument read_yaml_document(const std::string& text, const std::string& origin, const InputLimits& lim) {
  // The limits' paragraphs start with the file; a problem names no file of its own.
  auto over_limit = [&](const Error& e) {
    const std::string& m = e.message();
    return failed({0, 0, str::starts_with(m, origin + ": ") ? m.substr(origin.size() + 2) : m, e.hint()});
  };
  try {
    check_input_size(origin, text.size(), lim);
  } catch (const Error& e) {
    return over_limit(e);
  }
  if (const auto bad = str::invalid_utf8_at(text)) {
    int line = 1, column = 1;
    for (size_t i = 0; i < *bad; ++i) text[i] == '\n' ? (++line, column = 1) : ++column;
    return failed({line, column, fmt::format("not valid UTF-8 (byte 0x{:02x})", static_cast<unsigned char>(text[*bad])),
                   "Save the file as UTF-8."});
  }
  YamlDocument d;
  try {
    check_while_parsing(text, lim);
    d.root = YAML::Load(text);
  } catch (const LimitAt& at) {
    return failed(limit_problem(at, origin, lim));
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own guard, whose message is "bad file"
    return failed(limit_problem({LimitAt::Depth, e.mark.line, e.mark.column}, origin, lim));
  } catch (const YAML::ParserException& e) {
    return failed({e.mark.line + 1, e.mark.column + 1, "not valid YAML: " + e.msg,
                   "Check the indentation and quoting near that spot."});
  }
  try {
    Budget b{origin, lim};
    b.aliases = text.find('*') != std::string::npos;
    b.walk(d.root, 0);
  } catch (const Error& e) {
    return over_limit(e);
  }
  return d;
}

YAML::Node load_yaml_document(const std::string& text, const std::string& origin, const InputLimits& lim) {
  YamlDocument d = read_yaml_document(text, origin, lim);
  if (!d.problem) return d.root;
  const YamlProblem& p = *d.problem;
  const std::string where = p.line > 0 ? fmt::format("{}:{}:{}", origin, p.line, p.column) : origin;
  throw Error(fmt::format("{}: {}", where, p.message), p.hint);
}

}  // namespace mtrain
