#include "mtrain/trainer/model/model_check_command.hpp"

#include <ostream>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/core/torchscript_archive.hpp"
#include "mtrain/trainer/model/torchscript.hpp"
#include "mtrain/trainer/model/torchscript_code_check.hpp"
#include "mtrain/trainer/model/traced_module.hpp"

#include <torch/csrc/jit/serialization/import.h>

namespace mtrain::trainer {

nlohmann::json run_model_check(const std::string& path, bool trusted) {
  const TorchScriptArchive archive = read_torchscript_archive(path);
  const CodeCheck check = check_torchscript_code(archive.code);
  // What only the loaded module tells (a trace's frozen modes, the submodule classes) is asked
  // only of code that may run: loading runs its __setstate__.
  nlohmann::json classes = nlohmann::json::array();
  if ((trusted || check.findings.empty()) && check.unknown.empty()) {
    torch::jit::Module m;
    try {
      m = torch::jit::load(path, at::kCPU);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      throw Error(fmt::format("LibTorch cannot load the TorchScript model '{}': {}", path, what.substr(0, what.find('\n'))),
                  "script and save the model again with the PyTorch this mtrain-worker was built against");
    }
    check_trace_modes(path, frozen_mode_ops(m));
    for (const auto& [name, n] : submodule_classes(m)) classes.push_back({{"name", name}, {"count", n}});
  }
  auto refs = [](const std::vector<OperatorUse>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : v) a.push_back({{"name", r.name}, {"where", r.where}});
    return a;
  };
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : check.findings) findings.push_back({{"what", f.what}, {"where", f.where}});
  return {{"saved_by", archive.saved_by()},
          {"format_version", archive.format_version},
          {"operators", refs(check.operators)},
          {"unknown", refs(check.unknown)},
          {"findings", findings},
          {"classes", classes}};
}

int run_model_check_command(const std::vector<std::string>& args, std::ostream& out) {
  std::vector<std::string> files;
  bool trusted = false;
  for (const auto& a : args) (a == "--trusted" ? (void)(trusted = true) : files.push_back(a));
  if (files.size() != 1 || files[0].empty() || files[0][0] == '-')
    throw Error("mtrain-worker model-check takes one argument, the TorchScript file",
                "mtrain-worker model-check [--trusted] FILE");
  // JSON escapes control characters, and invalid UTF-8 is replaced, never thrown on.
  out << run_model_check(files[0], trusted).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
  if (!out) throw Error("cannot write the model check's result to standard output");
  return 0;
}

}  // namespace mtrain::trainer
