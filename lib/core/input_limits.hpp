#pragma once
// Limits on structured files a user hands us (job YAML, imported DeepSpeed/accelerate configs,
// Slurm job files, checkpoint manifests). A parser's work must be bounded by the input it is
// given: a file over the size limit is refused before parsing; a document nested deeper than
// the depth limit, or whose YAML aliases expand to more nodes than the node limit (an "alias
// bomb": a few hundred bytes that expand to billions of nodes), is refused after parsing but
// before anything walks it recursively. Every refusal is one paragraph (mtrain::Error, exit 2)
// naming the file and the limit. The YAML half is in yaml_input.hpp (its own target, so that the
// worker links no yaml-cpp); this half is JSON and plain text.
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/core/error.hpp"

namespace mtrain {

struct InputLimits {
  size_t max_bytes = 16u << 20;  // far above any config or manifest; below any harm
  int max_depth = 64;            // nesting of mappings/lists (configs use < 10)
  size_t max_nodes = 100000;     // values after alias expansion (configs hold < 1000)
};

// The paragraphs (shared by the JSON and YAML readers).
Error input_too_large(const std::string& origin, size_t bytes, const InputLimits& lim = {});
Error input_too_deep(const std::string& origin, const InputLimits& lim = {});
Error input_too_many_nodes(const std::string& origin, bool aliases, const InputLimits& lim = {});

// Throws input_too_large when `bytes` exceeds the limit.
void check_input_size(const std::string& origin, size_t bytes, const InputLimits& lim = {});

// The file's text, reading at most max_bytes + 1 bytes (so /dev/zero or a FIFO cannot make it
// read forever); nullopt when the file cannot be opened; input_too_large when it is bigger.
std::optional<std::string> read_input_file(const std::string& path, const InputLimits& lim = {});

// nlohmann::json::parse with the size, depth and node limits. Syntax errors are the parser's own
// exceptions (json::parse_error etc., for the caller's own message); limits throw mtrain::Error.
nlohmann::json parse_json_limited(const std::string& text, const std::string& origin,
                                  bool ignore_comments = false, const InputLimits& lim = {});

}  // namespace mtrain
