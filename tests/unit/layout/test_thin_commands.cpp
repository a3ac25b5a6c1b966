// docs/architecture.md §2: `apps/mtrain/cmd_<name>.cpp` are thin — flags → an options struct →
// one library call (issue 41 item 8: `mtrain estimate` checked the model and the data itself and
// threw its own refusal, 28 lines in its callback). The rule as a test can hold it:
//  * a callback (what runs once the flags are parsed) has at most kBudget code lines: bind the
//    flags, call the library, write what it returns, set the exit code;
//  * a callback throws nothing, and a cmd file throws only UsageError (a flag's value refused),
//    RuntimeFailure (the command's own output or program failed) or kExitNotBuilt: a refusal of
//    the job itself is the library's, where its words are tested.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "source_tree.hpp"

using namespace mtrain::layout;

namespace {

// The longest thin callback today (`__complete`: its argument split, the runner and the print).
constexpr int kBudget = 12;

struct Callback {
  int line = 0;  // of `->callback(`
  std::string body;  // between the lambda's braces
};

// Skips a string or character literal or a comment starting at text[i]; returns the index after
// it (i itself when none starts there).
size_t skip_literal(const std::string& text, size_t i) {
  if (text.compare(i, 2, "//") == 0) return text.find('\n', i) == std::string::npos ? text.size() : text.find('\n', i);
  if (text[i] != '"' && text[i] != '\'') return i;
  const char quote = text[i];
  for (++i; i < text.size() && text[i] != quote; ++i)
    if (text[i] == '\\') ++i;
  return i + 1;
}

std::vector<Callback> callbacks_in(const std::string& text) {
  std::vector<Callback> out;
  for (size_t at = text.find("->callback("); at != std::string::npos; at = text.find("->callback(", at + 1)) {
    const size_t open = text.find('{', at);
    int depth = 0;
    size_t i = open;
    for (; i < text.size(); ++i) {
      const size_t past = skip_literal(text, i);
      if (past != i) {
        i = past - 1;
        continue;
      }
      if (text[i] == '{') ++depth;
      if (text[i] == '}' && --depth == 0) break;
    }
    out.push_back({1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n')),
                   text.substr(open + 1, i - open - 1)});
  }
  return out;
}

int code_lines(const std::string& body) {
  std::istringstream in(body);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    const auto b = line.find_first_not_of(" \t");
    if (b != std::string::npos && line.compare(b, 2, "//") != 0) ++n;
  }
  return n;
}

// Each `throw X(` of `text` with the statement up to its `;`.
std::vector<std::string> throws_in(const std::string& text) {
  static const std::regex head(R"(\bthrow\s+[\w:]+\s*\()");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), head); it != std::sregex_iterator(); ++it) {
    const auto at = static_cast<size_t>(it->position());
    size_t end = at;
    while (end < text.size() && text[end] != ';') end = std::max(end + 1, skip_literal(text, end));
    out.push_back(text.substr(at, end - at));
  }
  return out;
}

bool allowed_throw(const std::string& statement) {
  static const std::regex kind(R"(^throw\s+(mtrain::)?(UsageError|RuntimeFailure)\s*\()");
  return std::regex_search(statement, kind) || statement.find("kExitNotBuilt") != std::string::npos;
}

}  // namespace

TEST_CASE("each mtrain command's callback binds flags and makes the library call, within its budget", "[layout]") {
  const auto files = files_under("apps/mtrain", {".cpp"});
  int seen = 0;
  for (const auto& f : files) {
    if (f.rfind("apps/mtrain/cmd_", 0) != 0) continue;
    const std::string text = read_text(source_dir() + "/" + f);
    for (const auto& c : callbacks_in(text)) {
      INFO(f << ":" << c.line << ": a callback of " << code_lines(c.body) << " code lines:\n" << c.body);
      CHECK(code_lines(c.body) <= kBudget);
      CHECK(throws_in(c.body).empty());
      ++seen;
    }
    for (const auto& t : throws_in(text)) {
      INFO(f << ": " << t);
      CHECK(allowed_throw(t));
    }
  }
  CHECK(seen >= 25);  // every command and subcommand
}

TEST_CASE("the thin-command rule reads callbacks and throws as meant", "[layout]") {
  const std::string src =
      "x->callback([f, &exit] {\n"
      "  // a comment } with a brace\n"
      "  auto s = std::string(\"}{\");\n"
      "\n"
      "  if (a) { b(); }\n"
      "  exit.code = 0;\n"
      "});\n"
      "y->callback([] { run(); });\n";
  const auto cbs = callbacks_in(src);
  REQUIRE(cbs.size() == 2);
  CHECK(code_lines(cbs[0].body) == 3);
  CHECK(cbs[1].line == 8);
  CHECK(code_lines(cbs[1].body) == 1);
  REQUIRE(throws_in("  throw Error(\"a;b\", \"\", kExitNotBuilt);").size() == 1);
  CHECK(allowed_throw(throws_in("  throw Error(\"a;b\", \"\", kExitNotBuilt);")[0]));
  CHECK(allowed_throw("throw UsageError(\"--format must be text or json\")"));
  CHECK(allowed_throw("throw mtrain::RuntimeFailure(\"cannot write\")"));
  CHECK(allowed_throw("throw Error(\"no worker\", \"build it\", kExitNotBuilt)"));
  CHECK_FALSE(allowed_throw("throw Error(\"estimate measures the model on its data, and \" + p.message, p.hint)"));
}
