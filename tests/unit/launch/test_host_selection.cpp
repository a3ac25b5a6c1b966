// The hostfile's hosts a launch runs on (lib/launch/host_selection.hpp), over in-memory probes:
// the filters select hosts and the options they came from are left as they were. Before, the
// selection cleared --include/--exclude in the options it was given (issue 41 item 4).
#include <catch2/catch.hpp>

#include "fakes/fake_launch_probes.hpp"
#include "lib/launch/host_selection.hpp"

using namespace mtrain;
using namespace mtrain::launch;
using mtrain::testing::FakeProbes;

namespace {

topology::Inventory two_hosts() { return {{"worker-0", "", {0, 1}}, {"worker-1", "alice", {0, 1, 2}}}; }

LaunchOptions with_hostfile(const std::string& path) {
  LaunchOptions o;
  o.plan.program = {"/bin/train"};
  o.multi.hostfile = path;
  return o;
}

}  // namespace

TEST_CASE("selected_hosts: the filters choose the hostfile's hosts and stay in the options", "[launch][hosts]") {
  FakeProbes probes;
  probes.hostfiles["hosts"] = two_hosts();
  LaunchOptions o = with_hostfile("hosts");
  o.plan.include = "worker-1:0,2";
  const auto hosts = selected_hosts(o, probes);
  REQUIRE(hosts);
  REQUIRE(hosts->size() == 1);
  CHECK(hosts->front().host == "worker-1");
  CHECK(hosts->front().slots == std::vector<int>{0, 2});
  CHECK(o.plan.include == "worker-1:0,2");  // the caller's, unchanged
  o.plan.include.clear();
  o.plan.exclude = "worker-0";
  const auto rest = selected_hosts(o, probes);
  REQUIRE(rest);
  CHECK(rest->size() == 1);
  CHECK(o.plan.exclude == "worker-0");
}

TEST_CASE("selected_hosts: no hostfile, or a missing one that no filter needs, is this machine", "[launch][hosts]") {
  FakeProbes probes;
  LaunchOptions o = with_hostfile("");
  CHECK_FALSE(selected_hosts(o, probes));
  o.multi.hostfile = "absent";
  o.plan.include = "localhost:1";
  CHECK_FALSE(selected_hosts(o, probes));
  REQUIRE(probes.notes.size() == 1);
  CHECK_THAT(probes.notes[0], Catch::Contains("hostfile absent not found; running on this machine only"));
  o.plan.include = "worker-3";  // another host: the hostfile is needed, and its absence is an error
  CHECK_THROWS_WITH(selected_hosts(o, probes), Catch::Contains("absent: cannot read the hostfile"));
}

TEST_CASE("names_other_host: any host but localhost in an --include/--exclude text", "[launch][hosts]") {
  CHECK_FALSE(names_other_host(""));
  CHECK_FALSE(names_other_host("localhost"));
  CHECK_FALSE(names_other_host("localhost:0,1"));
  CHECK(names_other_host("worker-1"));
  CHECK(names_other_host("localhost:0@worker-2:1"));
}

TEST_CASE("decide_launch: with a hostfile the filters pick hosts, not GPUs of this machine", "[launch][hosts]") {
  FakeProbes probes;
  probes.hostfiles["hosts"] = two_hosts();
  LaunchOptions o = with_hostfile("hosts");
  o.plan.include = "worker-1";
  o.dry_run = true;
  const auto d = decide_launch(o, {{{"TMPDIR", "/scratch"}}, "/home/u"}, probes);
  REQUIRE(d.hosts);
  CHECK(d.hosts->size() == 1);
  CHECK(d.options.plan.include.empty());  // the plan's GPU selection of this machine
  CHECK(o.plan.include == "worker-1");
}
