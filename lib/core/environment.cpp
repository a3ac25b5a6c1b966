#include "lib/core/environment.hpp"

#include <unistd.h>  // environ (g++ defines _GNU_SOURCE)

namespace mtrain {

std::map<std::string, std::string> process_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

}  // namespace mtrain
