#pragma once
// `mtrain export`: the compiled-model exporter (python/mtrain_export, issue 47) run by the Python
// whose PyTorch matches this mtrain's worker. The exporter is Python because torch.export and
// AOTInductor are; mtrain finds it and the interpreter, then replaces itself with
// `PYTHON -m mtrain_export ARGS…` (the exporter's own argparse defines and checks ARGS; its
// --help is the command's help), so the user's signals and the exit status are the exporter's.
#include <optional>
#include <string>
#include <vector>

#include "lib/core/worker_facts.hpp"

namespace mtrain::launch {

struct ExportRequest {
  std::string python;  // --python; "" = MTRAIN_PYTHON, the worker's, python3
  std::vector<std::string> args;  // for the exporter, in order
};

// Where the exporter lives, in order: <prefix>/share/mtrain/python beside an installed mtrain
// (bin/mtrain), then the checkout the worker was built from (its facts' source folder). "" when
// neither holds mtrain_export/__main__.py.
std::string find_exporter_dir(const std::string& self_exe, const std::optional<WorkerFacts>& facts);

// Pure: the interpreter — the flag, else MTRAIN_PYTHON (`env_python`, "" when unset), else the
// Python whose torch the worker links (its facts), else python3 on PATH.
std::string exporter_python(const std::string& flag, const std::string& env_python,
                            const std::optional<WorkerFacts>& facts);

// Pure: the command line, and PYTHONPATH with the exporter's folder first.
struct ExportExec {
  std::vector<std::string> argv;
  std::string pythonpath;
};
ExportExec export_exec(const std::string& python, const std::string& exporter_dir, const std::vector<std::string>& args,
                       const std::string& old_pythonpath);

// Effects: finds the exporter and the Python for this mtrain and execs it; returns only by
// throwing mtrain::Error (exit 2: no exporter beside this mtrain, an interpreter that cannot run).
[[noreturn]] void run_export(const ExportRequest& r);

}  // namespace mtrain::launch
