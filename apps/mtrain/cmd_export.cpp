// `mtrain export`: the compiled-model exporter (lib/launch/export_command.hpp). Only --python is
// mtrain's; every other word goes to the exporter, whose --help is this command's.
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "lib/core/error.hpp"
#include "lib/launch/export_command.hpp"

namespace mtrain::app {

void build_export(CLI::App* sub, Exit& exit) {
  sub->allow_extras();
  sub->set_help_flag();  // --help is the exporter's
  auto req = std::make_shared<launch::ExportRequest>();
  sub->add_option("--python", req->python,
                  "The Python whose PyTorch exports (default: MTRAIN_PYTHON, else the one this mtrain's worker was "
                  "built with, else python3)");
  sub->footer(
      "Usage: mtrain export MODULE.py:FACTORY --example NAME=DTYPE:DIMS … --wrap-module-types CLASS -o DIR "
      "(`mtrain export --help` prints the exporter's options; docs/your-model.md, \"Compiled packages\").");
  sub->callback([sub, req, &exit] {
    req->args = sub->remaining();
    exit.code = 0;
    launch::run_export(*req);
  });
}

}  // namespace mtrain::app
