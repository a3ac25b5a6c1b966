#include "mtrain/core/yaml_input.hpp"

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"

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
    d.root = YAML::Load(text);
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
