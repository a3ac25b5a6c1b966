// Exit codes mean what docs/architecture.md says (issue 41 item 5): 2 is bad input, found before
// the work began; 1 a broken invariant or a failure while running. Every throw of the trainer,
// the worker and the launcher names its kind (UsageError or RuntimeFailure, lib/core/error.hpp);
// a plain Error there only passes on a code it was given. Before, Error's default made 144 of
// the trainer's throws — invariants such as the communicator's shape checks included — exit 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <regex>
#include <sstream>

#include "source_tree.hpp"

using namespace mtrain::layout;

namespace {

struct Throw {
  std::string file;
  int line = 0;
  std::string kind;  // Error, UsageError, RuntimeFailure
  std::string args;  // the constructor's arguments, whitespace collapsed
};

// Every `throw [mtrain::]Kind(args)` of a file, its arguments matched to the closing parenthesis
// (string literals skipped).
std::vector<Throw> throws_in(const std::string& file) {
  const std::string src = read_text(source_dir() + "/" + file);
  static const std::regex head(R"(throw\s+(?:mtrain::)?(Error|UsageError|RuntimeFailure)\s*\()");
  std::vector<Throw> out;
  for (auto it = std::sregex_iterator(src.begin(), src.end(), head); it != std::sregex_iterator(); ++it) {
    size_t i = static_cast<size_t>(it->position() + it->length());
    const size_t start = i;
    for (int depth = 1; depth > 0 && i < src.size(); ++i) {
      if (src[i] == '"') {
        for (++i; i < src.size() && src[i] != '"'; ++i)
          if (src[i] == '\\') ++i;
      } else if (src[i] == '(') {
        ++depth;
      } else if (src[i] == ')') {
        --depth;
      }
    }
    std::string args;
    for (char c : src.substr(start, i - 1 - start))
      if (!std::isspace(static_cast<unsigned char>(c)) || (!args.empty() && args.back() != ' '))
        args += c == '\n' ? ' ' : c;
    const int line = 1 + static_cast<int>(std::count(src.begin(), src.begin() + it->position(), '\n'));
    out.push_back({file, line, (*it)[1].str(), args});
  }
  return out;
}

std::vector<Throw> throws_under(const std::vector<std::string>& dirs) {
  std::vector<Throw> all;
  for (const auto& d : dirs)
    for (const auto& f : files_under(d, {".cpp", ".hpp"}))
      for (auto& t : throws_in(f)) all.push_back(std::move(t));
  return all;
}

bool passes_a_code_on(const std::string& args) {
  static const std::regex code(R"(,\s*[\w.]*\bexit_code\(\)\s*$)");
  return std::regex_search(args, code);
}

}  // namespace

TEST_CASE("every throw of the trainer, the worker and the launcher names its exit code's kind", "[layout]") {
  const auto all = throws_under({"lib/trainer", "apps/mtrain-worker", "lib/launch"});
  REQUIRE(all.size() > 250);
  int usage = 0, failure = 0;
  for (const auto& t : all) {
    INFO(t.file << ":" << t.line << ": throw " << t.kind << "(" << t.args << ")");
    if (t.kind == "Error") CHECK(passes_a_code_on(t.args));  // else: UsageError or RuntimeFailure
    // A kind that also names a code would say two things.
    CHECK_FALSE((t.kind != "Error" && std::regex_search(t.args, std::regex(R"(kExit\w+\s*$)"))));
    usage += t.kind == "UsageError";
    failure += t.kind == "RuntimeFailure";
  }
  CHECK(usage > 150);
  CHECK(failure > 50);
}

TEST_CASE("internal invariants and runtime failures exit 1, not as bad input", "[layout]") {
  // A message fragment → the file whose throw says it: each is a bug or a failure of the machine,
  // never something the user's input would fix.
  const std::vector<std::pair<std::string, std::string>> runtime = {
      {"lib/trainer/comm/communicator.cpp", "must be contiguous"},
      {"lib/trainer/comm/communicator.cpp", "it is not a member of"},
      {"lib/trainer/comm/communicator.cpp", "reduce_scatter: input has"},
      {"lib/trainer/comm/communicator.cpp", "reduce_scatter_pieces: needs the shared-memory transport"},
      {"lib/trainer/comm/shm_transport.cpp", "is not an fp32 CPU contiguous"},
      {"lib/trainer/comm/communicator.cpp", "all_gather: output has"},
      {"lib/trainer/comm/compat.cpp", "was given to a gradient hook"},
      {"lib/trainer/data/sampler.cpp", "sampler rank"},
      {"lib/trainer/data/dataset.cpp", "sample index"},
      {"lib/trainer/model/loaded_program.cpp", "arguments, the trainer passed"},
      {"lib/trainer/strategy/sharded_engine.cpp", "the unit plan places parameter"},
      {"lib/trainer/strategy/sharded_engine.cpp", "forward_backward must run on the thread"},
      {"lib/trainer/data/tokens.cpp", "changed size while it was opened"},
      {"lib/launch/guardian.cpp", "cannot start the guardian process"},
  };
  for (const auto& [file, fragment] : runtime) {
    int found = 0;
    for (const auto& t : throws_in(file)) {
      if (t.args.find(fragment) == std::string::npos) continue;
      INFO(t.file << ":" << t.line << ": throw " << t.kind << "(" << t.args << ")");
      CHECK(t.kind == "RuntimeFailure");
      ++found;
    }
    INFO(file << ": " << fragment);
    CHECK(found == 1);
  }
  // And bad input stays exit 2 (the e2e tests hold these codes too).
  const std::vector<std::pair<std::string, std::string>> usage = {
      {"lib/trainer/loop/worker.cpp", "is not a TCP port"},
      {"lib/trainer/data/text.cpp", "cannot read text file"},
      {"lib/launch/preflight.cpp", "is already in use"},
      {"lib/launch/host_selection.cpp", "--launcher ssh needs a --hostfile"},
  };
  for (const auto& [file, fragment] : usage) {
    int found = 0;
    for (const auto& t : throws_in(file)) {
      if (t.args.find(fragment) == std::string::npos) continue;
      INFO(t.file << ":" << t.line << ": throw " << t.kind << "(" << t.args << ")");
      CHECK(t.kind == "UsageError");
      ++found;
    }
    INFO(file << ": " << fragment);
    CHECK(found == 1);
  }
}
