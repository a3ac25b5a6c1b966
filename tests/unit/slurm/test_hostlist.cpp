#include <catch2/catch.hpp>

#include "lib/core/error.hpp"
#include "lib/slurm/hostlist.hpp"

using mtrain::slurm::expand_counts;
using mtrain::slurm::expand_hostlist;
using V = std::vector<std::string>;

namespace {
std::string error_of(const std::string& list) {
  try {
    expand_hostlist(list);
  } catch (const mtrain::Error& e) {
    return e.message();
  }
  return "";
}
}  // namespace

TEST_CASE("hostlist: plain names and single ranges", "[slurm][hostlist]") {
  CHECK(expand_hostlist("n1") == V{"n1"});
  CHECK(expand_hostlist("a,b,c") == V{"a", "b", "c"});
  CHECK(expand_hostlist("node[1-3]") == V{"node1", "node2", "node3"});
  CHECK(expand_hostlist("node[7]") == V{"node7"});
}

TEST_CASE("hostlist: examples from Slurm's documentation", "[slurm][hostlist]") {
  // scontrol(1) "show hostnames": tux[1-3] → tux1 tux2 tux3
  CHECK(expand_hostlist("tux[1-3]") == V{"tux1", "tux2", "tux3"});
  // sbatch(1) --nodelist: host[1-5,7]
  CHECK(expand_hostlist("host[1-5,7]") == V{"host1", "host2", "host3", "host4", "host5", "host7"});
  // slurm.conf(5) NodeName=linux[0-64] and lx[10-20]
  CHECK(expand_hostlist("linux[0-64]").size() == 65);
  auto lx = expand_hostlist("lx[10-20]");
  CHECK(lx.size() == 11);
  CHECK(lx.front() == "lx10");
  CHECK(lx.back() == "lx20");
  // slurm.conf(5) multi-dimensional names: rack[0-63]_blade[0-41]
  auto rb = expand_hostlist("rack[0-63]_blade[0-41]");
  CHECK(rb.size() == 64 * 42);
  CHECK(rb[0] == "rack0_blade0");
  CHECK(rb[1] == "rack0_blade1");
  CHECK(rb[42] == "rack1_blade0");
}

TEST_CASE("hostlist: zero padding follows the lower bound", "[slurm][hostlist]") {
  CHECK(expand_hostlist("node[01-04,07]") == V{"node01", "node02", "node03", "node04", "node07"});
  CHECK(expand_hostlist("n[08-10]") == V{"n08", "n09", "n10"});
  CHECK(expand_hostlist("n[8-10]") == V{"n8", "n9", "n10"});
  CHECK(expand_hostlist("gpu[0098-0101]") == V{"gpu0098", "gpu0099", "gpu0100", "gpu0101"});
}

TEST_CASE("hostlist: suffixes, several groups and mixed lists", "[slurm][hostlist]") {
  CHECK(expand_hostlist("a[1-2]-ib,b3") == V{"a1-ib", "a2-ib", "b3"});
  CHECK(expand_hostlist("r[1-2]n[1-2]") == V{"r1n1", "r1n2", "r2n1", "r2n2"});
  CHECK(expand_hostlist("x[1,3],y[01-02],z") == V{"x1", "x3", "y01", "y02", "z"});
  CHECK(expand_hostlist("c1-[2-3].ib,c2") == V{"c1-2.ib", "c1-3.ib", "c2"});
  CHECK(expand_hostlist("n[1,1]") == V{"n1", "n1"});  // as written; Slurm never repeats nodes
}

TEST_CASE("hostlist: malformed lists name the column", "[slurm][hostlist]") {
  CHECK_THAT(error_of("node[1-"), Catch::Contains("column 5") && Catch::Contains("never closed"));
  CHECK_THAT(error_of("node[3-1]"), Catch::Contains("column 6") && Catch::Contains("backwards"));
  CHECK_THAT(error_of("node[a-b]"), Catch::Contains("column 6") && Catch::Contains("not a digit"));
  CHECK_THAT(error_of("node]1"), Catch::Contains("column 5"));
  CHECK_THAT(error_of("a,,b"), Catch::Contains("column 3") && Catch::Contains("empty host"));
  CHECK_THAT(error_of("n[1-2[3]]"), Catch::Contains("nested"));
  CHECK_THAT(error_of("n[]"), Catch::Contains("empty brackets"));
  CHECK_THAT(error_of("n[1,,2]"), Catch::Contains("column 5"));
  CHECK_THAT(error_of("n[1-]"), Catch::Contains("both sides"));
  CHECK_THAT(error_of("a b"), Catch::Contains("spaces"));
  CHECK_THAT(error_of("n[1-100000000]"), Catch::Contains("more than"));
  CHECK_THAT(error_of(""), Catch::Contains("empty hostlist"));
  CHECK_THAT(error_of("a,"), Catch::Contains("empty host"));
}

TEST_CASE("count lists: SLURM_TASKS_PER_NODE grammar", "[slurm][hostlist]") {
  CHECK(expand_counts("2(x3),1") == std::vector<int>{2, 2, 2, 1});
  CHECK(expand_counts("8") == std::vector<int>{8});
  CHECK(expand_counts("4(x2)") == std::vector<int>{4, 4});
  CHECK_THROWS_WITH(expand_counts("2(x,1"), Catch::Contains("column 2"));
  CHECK_THROWS_WITH(expand_counts("a"), Catch::Contains("column 1"));
  CHECK_THROWS_AS(expand_counts(""), mtrain::Error);
}
