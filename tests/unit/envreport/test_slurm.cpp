// The Slurm allocation in `mtrain env` (lib/envreport/slurm.cpp), from SLURM_* and sinfo.
#include <catch2/catch.hpp>

#include "machine.hpp"
#include "lib/envreport/report.hpp"

using namespace mtrain::envreport;
using namespace mtrain::envreport::testing;
using json = nlohmann::json;

TEST_CASE("a Slurm allocation is read from SLURM_* and sinfo", "[envreport]") {
  auto p = healthy();
  p.programs["sinfo"] = "/usr/bin/sinfo";
  p.commands["sinfo --version"] = {true, 0, "slurm 22.05.8\n", ""};
  p.env["SLURM_JOB_ID"] = "4242";
  p.env["SLURM_JOB_NODELIST"] = "node[01-02]";
  p.env["SLURM_NODEID"] = "1";
  p.env["SLURM_JOB_PARTITION"] = "gpu";
  auto r = collect_report(p, opts());
  const auto& s = r.at("slurm");
  CHECK(s.at("installed") == true);
  CHECK(s.at("version") == "slurm 22.05.8");
  REQUIRE(s.at("in_allocation") == true);
  CHECK(s.at("allocation").at("job_id") == "4242");
  CHECK(s.at("allocation").at("nodes") == json({"node01", "node02"}));
  CHECK(s.at("allocation").at("partition") == "gpu");
  CHECK(render_text(r).find("job 4242 on node01,node02") != std::string::npos);
}
