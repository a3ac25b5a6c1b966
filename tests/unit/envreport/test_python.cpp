// The python3 and PyTorch that `launch -- python3` ranks use (lib/envreport/python.cpp).
#include <catch2/catch.hpp>

#include "machine.hpp"
#include "lib/envreport/report.hpp"

using namespace mtrain::envreport;
using namespace mtrain::envreport::testing;
using json = nlohmann::json;

TEST_CASE("env names the python3 and PyTorch that `launch -- python3` ranks use", "[envreport]") {
  auto p = healthy();
  auto none = collect_report(p, opts());
  CHECK(none.at("python").at("found") == false);
  CHECK_THAT(render_text(none), Catch::Contains("python3 is not on PATH"));

  p.programs["python3"] = "/usr/bin/python3";
  CommandResult py;
  py.started = true;
  py.rc = 0;
  py.out = R"({"executable":"/usr/bin/python3","version":"3.11.2","torch":"1.13.1","torch_cuda":null,"cuda_available":false,"distributed":true})";
  p.commands[std::string("/usr/bin/python3 -c ") + kPythonProbe] = py;
  auto r = collect_report(p, opts());
  CHECK(r.at("python").at("path") == "/usr/bin/python3");
  CHECK(r.at("python").at("torch") == "1.13.1");
  const std::string text = render_text(r);
  CHECK_THAT(text, Catch::Contains("/usr/bin/python3 (/usr/bin/python3, 3.11.2)"));
  CHECK_THAT(text, Catch::Contains("1.13.1, CPU build, no GPU usable"));

  py.out = R"({"executable":"/usr/bin/python3","version":"3.11.2","torch":null,"torch_error":"ModuleNotFoundError: No module named 'torch'"})";
  p.commands[std::string("/usr/bin/python3 -c ") + kPythonProbe] = py;
  CHECK_THAT(render_text(collect_report(p, opts())), Catch::Contains("not importable: ModuleNotFoundError"));
}
