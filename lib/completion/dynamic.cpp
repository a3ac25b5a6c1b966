// `mtrain __complete KIND …`: the values that cannot be written into a completion script.
#include <algorithm>
#include <filesystem>

#include "lib/completion/model.hpp"
#include "lib/config/registry.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/topology/hostfile.hpp"

namespace fs = std::filesystem;

namespace mtrain::completion {

namespace {

std::vector<std::string> registry_choices(const std::string& key) {
  const auto* s = config::job_registry().find(key);
  return s ? s->choices : std::vector<std::string>{};
}

// Files ending in .yaml / .yml and folders (with '/') that start with `prefix`.
std::vector<std::string> yaml_files(const std::string& prefix) {
  std::vector<std::string> out;
  const auto slash = prefix.rfind('/');
  const std::string dir_text = slash == std::string::npos ? "" : prefix.substr(0, slash + 1);
  const std::string stem = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
  std::error_code ec;
  fs::directory_iterator it(dir_text.empty() ? fs::path(".") : fs::path(dir_text), ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!str::starts_with(name, stem) || (name[0] == '.' && (stem.empty() || stem[0] != '.'))) continue;
    std::error_code e2;
    if (it->is_directory(e2)) out.push_back(dir_text + name + "/");
    else if (str::ends_with(name, ".yaml") || str::ends_with(name, ".yml")) out.push_back(dir_text + name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> dynamic_values(const std::string& kind, const std::vector<std::string>& args, const Runner& run) {
  if (kind == "strategies") return registry_choices("strategy");
  if (kind == "models") return registry_choices("model.name");
  if (kind == "yaml") return yaml_files(args.empty() ? "" : args[0]);
  if (kind == "settings") {
    // `--set KEY=VALUE`: every key with '=', and KEY=VALUE for each value of a closed set, so
    // `--set model.<Tab>` lists the model settings and `--set model.name=<Tab>` the models.
    std::vector<std::string> out;
    for (const auto& st : config::job_registry().all()) {
      if (st.per_invocation) continue;  // --set refuses them (registry.hpp)
      out.push_back(st.key + "=");
      for (const auto& c : st.choices) out.push_back(st.key + "=" + c);
      if (st.type == config::Type::Bool) out.insert(out.end(), {st.key + "=true", st.key + "=false"});
    }
    return out;
  }
  if (kind == "partitions") {
    std::vector<std::string> out;
    for (auto p : str::split(run({"sinfo", "-h", "-o", "%P"}), '\n')) {
      p = str::trim(p);
      if (!p.empty() && p.back() == '*') p.pop_back();  // sinfo marks the default partition
      if (!p.empty() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
    return out;
  }
  if (kind == "hosts") {
    std::string hostfile;
    for (size_t i = 0; i < args.size(); ++i) {
      // bash splits "--hostfile=FILE" into "--hostfile" "=" "FILE".
      if (args[i] == "--hostfile" && i + 2 < args.size() && args[i + 1] == "=") hostfile = args[i + 2];
      else if (args[i] == "--hostfile" && i + 1 < args.size()) hostfile = args[i + 1];
      else if (str::starts_with(args[i], "--hostfile=")) hostfile = args[i].substr(11);
    }
    std::vector<std::string> out;
    if (hostfile.empty()) return out;
    try {
      for (const auto& h : topology::load_hostfile(hostfile)) out.push_back(h.host);
    } catch (const Error&) {
      // A broken hostfile completes nothing; `mtrain launch` reports it properly.
    }
    return out;
  }
  return {};
}

}  // namespace mtrain::completion
