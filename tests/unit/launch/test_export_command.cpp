// `mtrain export` (lib/launch/export_command.cpp): where the bundled exporter is found (the
// installed layout, then the worker's checkout), which Python runs it, and the command line.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "lib/launch/export_command.hpp"
#include "temp_dir.hpp"

using namespace mtrain;
using mtrain::testing::TempDir;
namespace fs = std::filesystem;

namespace {
void exporter_at(const fs::path& python_dir) {
  fs::create_directories(python_dir / "mtrain_export");
  std::ofstream(python_dir / "mtrain_export" / "__main__.py") << "\n";
}
WorkerFacts built_from(const std::string& source_dir, const std::string& python) {
  WorkerFacts f;
  f.libtorch = "2.15.0";
  f.torch_line = "python";
  f.source_dir = source_dir;
  f.torch_python = python;
  return f;
}
}  // namespace

TEST_CASE("export: the installed exporter first, then the worker's checkout", "[launch][export]") {
  TempDir d("mtrain_export_dir");
  const fs::path prefix = d.path / "usr";
  fs::create_directories(prefix / "bin");
  const std::string exe = (prefix / "bin" / "mtrain").string();
  const fs::path checkout = d.path / "src";
  CHECK(launch::find_exporter_dir(exe, std::nullopt).empty());
  CHECK(launch::find_exporter_dir(exe, built_from(checkout.string(), "")).empty());  // no python/ there yet
  exporter_at(checkout / "python");
  CHECK(launch::find_exporter_dir(exe, built_from(checkout.string(), "")) == (checkout / "python").string());
  exporter_at(prefix / "share" / "mtrain" / "python");
  CHECK(launch::find_exporter_dir(exe, built_from(checkout.string(), "")) ==
        (prefix / "share" / "mtrain" / "python").string());
  // A folder without the module's entry point is not the exporter.
  fs::remove(prefix / "share" / "mtrain" / "python" / "mtrain_export" / "__main__.py");
  CHECK(launch::find_exporter_dir(exe, std::nullopt).empty());
}

TEST_CASE("export: --python, then MTRAIN_PYTHON, then the worker's Python, then python3", "[launch][export]") {
  const WorkerFacts f = built_from("/src", "/venv/bin/python");
  CHECK(launch::exporter_python("/opt/py", "/env/py", f) == "/opt/py");
  CHECK(launch::exporter_python("", "/env/py", f) == "/env/py");
  CHECK(launch::exporter_python("", "", f) == "/venv/bin/python");
  CHECK(launch::exporter_python("", "", built_from("/src", "")) == "python3");  // the 1.13 line records none
  CHECK(launch::exporter_python("", "", std::nullopt) == "python3");
}

TEST_CASE("export: the exporter's words in order, its folder first on PYTHONPATH", "[launch][export]") {
  const auto e = launch::export_exec("/venv/bin/python", "/usr/share/mtrain/python",
                                     {"m.py:make", "--example", "input=int64:6x8", "-o", "pkg"}, "");
  CHECK(e.argv == std::vector<std::string>{"/venv/bin/python", "-m", "mtrain_export", "m.py:make", "--example",
                                           "input=int64:6x8", "-o", "pkg"});
  CHECK(e.pythonpath == "/usr/share/mtrain/python");
  CHECK(launch::export_exec("py", "/x", {}, "/mine:/more").pythonpath == "/x:/mine:/more");
}
