#include "lib/trainer/model/load_failure.hpp"

#include <regex>

#include <fmt/format.h>

#include "lib/core/strings.hpp"

namespace mtrain::trainer {

namespace {
// Named apart from torchscript.cpp's kExport: the two files can share a unity batch.
constexpr const char* kExportHow = "export it with torch.jit.save(torch.jit.script(model), PATH)";

// The first line of a message, trimmed and bounded (a TorchScript error can be pages long).
std::string message_head(const std::string& s) {
  std::string line = str::trim(s.substr(0, s.find('\n')));
  if (line.size() > 300) line = line.substr(0, 300) + "…";
  return line;
}
}  // namespace

Error torchscript_load_failure(const std::string& path, const std::string& what,
                               const std::optional<WorkerFacts>& facts) {
  const std::string mine = facts ? facts->describe() : std::string("this worker's LibTorch");
  const std::string rebuild =
      facts ? fmt::format("build mtrain against the PyTorch that scripted it: `{}`", facts->build_against_python_command())
            : std::string("build mtrain against the PyTorch that scripted it (scripts/bootstrap --torch python)");
  std::smatch m;
  static const std::regex kUnknownOp(R"(Unknown builtin op: ([A-Za-z_][A-Za-z0-9_]*::[A-Za-z0-9_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)?))");
  static const std::regex kVersion(R"(version (\d+), but the maximum supported version for reading is (\d+))");
  if (std::regex_search(what, m, kUnknownOp))
    return Error(fmt::format("the TorchScript model '{}' calls {}, which {} does not have (it was scripted by a "
                             "newer PyTorch)",
                             path, m[1].str(), mine),
                 rebuild + ", or script the model with PyTorch " + (facts ? facts->libtorch : std::string("1.13")))
        .at("model.path");
  if (std::regex_search(what, m, kVersion))
    return Error(fmt::format("the TorchScript model '{}' has file format {}, newer than the {} that {} reads", path,
                             m[1].str(), m[2].str(), mine),
                 rebuild)
        .at("model.path");
  if (what.find("PytorchStreamReader") != std::string::npos || what.find("constants.pkl") != std::string::npos)
    return Error(fmt::format("'{}' is not a TorchScript archive ({})", path, message_head(what)),
                 fmt::format("a file written by torch.save (a state dict or a pickled nn.Module) cannot be "
                             "trained here; {}",
                             kExportHow))
        .at("model.path");
  return Error(fmt::format("the TorchScript model '{}' cannot be loaded by {}: {}", path, mine, message_head(what)),
               fmt::format("check that it loads with torch.jit.load in the PyTorch that saved it; {}; or {}",
                           kExportHow, rebuild))
      .at("model.path");
}

}  // namespace mtrain::trainer
