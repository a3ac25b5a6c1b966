#include "mtrain/trainer/model/model_check_command.hpp"

#include <ostream>

#include "mtrain/core/error.hpp"
#include "mtrain/core/torchscript_archive.hpp"
#include "mtrain/trainer/model/torchscript_code_check.hpp"

namespace mtrain::trainer {

nlohmann::json run_model_check(const std::string& path) {
  const TorchScriptArchive archive = read_torchscript_archive(path);
  const CodeCheck check = check_torchscript_code(archive.code);
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
          {"findings", findings}};
}

int run_model_check_command(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-')
    throw Error("mtrain-worker model-check takes one argument, the TorchScript file", "mtrain-worker model-check FILE");
  // JSON escapes control characters, and invalid UTF-8 is replaced, never thrown on.
  out << run_model_check(args[0]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
  if (!out) throw Error("cannot write the model check's result to standard output");
  return 0;
}

}  // namespace mtrain::trainer
