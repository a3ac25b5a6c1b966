#include "lib/trainer/model/model_check_command.hpp"

#include <optional>
#include <ostream>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/torchscript_archive.hpp"
#include "lib/trainer/model/compiled_model.hpp"
#include "lib/trainer/model/torchscript.hpp"
#include "lib/trainer/model/torchscript_code_check.hpp"
#include "lib/trainer/model/trace_pair.hpp"
#include "lib/trainer/model/traced_module.hpp"

#include <torch/csrc/jit/serialization/import.h>

namespace mtrain::trainer {

namespace {

nlohmann::json refs(const std::vector<OperatorUse>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : v) a.push_back({{"name", r.name}, {"where", r.where}});
  return a;
}

// One file's facts from its code alone (never run).
nlohmann::json code_facts(const TorchScriptArchive& archive, const CodeCheck& check) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : check.findings) findings.push_back({{"what", f.what}, {"where", f.where}});
  return {{"saved_by", archive.saved_by()},
          {"format_version", archive.format_version},
          {"operators", refs(check.operators)},
          {"unknown", refs(check.unknown)},
          {"findings", findings}};
}

torch::jit::Module load(const std::string& path) {
  try {
    return torch::jit::load(path, at::kCPU);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw UsageError(
        fmt::format("LibTorch cannot load the TorchScript model '{}': {}", path, what.substr(0, what.find('\n'))),
        "script and save the model again with the PyTorch this mtrain-worker was built against");
  }
}

}  // namespace

nlohmann::json run_model_check(const std::string& path, bool trusted, const std::string& eval_path) {
  const TorchScriptArchive archive = read_torchscript_archive(path);
  const CodeCheck check = check_torchscript_code(archive.code);
  std::optional<TorchScriptArchive> eval_archive;
  std::optional<CodeCheck> eval_check;
  if (!eval_path.empty()) {
    eval_archive = read_torchscript_archive(eval_path);
    eval_check = check_torchscript_code(eval_archive->code);
  }
  const auto may_run = [&](const CodeCheck& c) { return (trusted || c.findings.empty()) && c.unknown.empty(); };
  // What only the loaded module tells (a trace's frozen modes, the pair's tensors, the submodule
  // classes) is asked only of code that may run: loading runs its __setstate__.
  nlohmann::json classes = nlohmann::json::array();
  if (may_run(check) && (!eval_check || may_run(*eval_check))) {
    const torch::jit::Module m = load(path);
    if (eval_check) {
      const torch::jit::Module e = load(eval_path);
      const ModelFile eval_file{eval_path, e, trace_facts(e)};
      check_trace_pair({path, m, trace_facts(m)}, &eval_file);
    } else {
      check_trace_pair({path, m, trace_facts(m)}, nullptr);
    }
    for (const auto& [name, n] : submodule_classes(m)) classes.push_back({{"name", name}, {"count", n}});
  }
  nlohmann::json out = code_facts(archive, check);
  out["classes"] = classes;
  if (eval_check) out["eval"] = code_facts(*eval_archive, *eval_check);
  return out;
}

int run_model_check_command(const std::vector<std::string>& args, std::ostream& out) {
  std::vector<std::string> files;
  std::string eval_path, init;
  bool trusted = false, compiled = false, init_strict = true;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--trusted") {
      trusted = true;
    } else if (args[i] == "--compiled") {
      compiled = true;
    } else if (args[i] == "--init" && i + 1 < args.size()) {
      init = args[++i];
    } else if (args[i] == "--init-not-strict") {
      init_strict = false;
    } else if (args[i] == "--eval" && i + 1 < args.size()) {
      eval_path = args[++i];
    } else {
      files.push_back(args[i]);
    }
  }
  if (files.size() != 1 || files[0].empty() || files[0][0] == '-')
    throw UsageError(
        "mtrain-worker model-check takes one argument, the TorchScript file or the compiled package folder",
        "mtrain-worker model-check [--trusted] [--eval EVAL_FILE] FILE, or mtrain-worker model-check "
        "--compiled [--init FILE [--init-not-strict]] DIR");
  if (compiled) {
    // Loads no program (that runs native code): the manifest, the release, model.init's table.
    check_compiled_package(files[0], init, init_strict);
    out << R"({"compiled": true})" << std::endl;
    if (!out) throw RuntimeFailure("cannot write the model check's result to standard output");
    return 0;
  }
  // JSON escapes control characters, and invalid UTF-8 is replaced, never thrown on.
  out << run_model_check(files[0], trusted, eval_path).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
      << std::endl;
  if (!out) throw RuntimeFailure("cannot write the model check's result to standard output");
  return 0;
}

}  // namespace mtrain::trainer
