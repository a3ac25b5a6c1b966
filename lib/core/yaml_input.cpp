#include "mtrain/core/yaml_input.hpp"

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

}  // namespace

YAML::Node load_yaml_limited(const std::string& text, const std::string& origin, const InputLimits& lim) {
  check_input_size(origin, text.size(), lim);
  YAML::Node root = YAML::Load(text);
  Budget b{origin, lim};
  b.aliases = text.find('*') != std::string::npos;
  b.walk(root, 0);
  return root;
}

}  // namespace mtrain
