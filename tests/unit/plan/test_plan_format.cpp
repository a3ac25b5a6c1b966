// The plan as JSON (the contract of docs/architecture.md §4) and as text (lib/plan/plan_format.cpp),
// over hand-built plans: every field in its place, GPU or none, plurals, argv shell-quoted.
#include <catch2/catch.hpp>

#include "lib/plan/plan.hpp"
#include <fstream>
#include <iterator>
#include <string>

using namespace mtrain::plan;

namespace {
LaunchPlan two_rank_plan() {
  LaunchPlan p;
  p.job_id = "j1";
  p.world_size = 2;
  p.nnodes = 1;
  p.master_addr = "10.0.0.1";
  p.master_port = 29500;
  p.rdzv_endpoint = "10.0.0.1:29500";
  p.max_restarts = 3;
  Node n;
  n.host = "node-a";
  n.gpus = {2, 5};
  n.workers.push_back(Worker{0, 0, 2, {"python3", "train.py", "--name", "a b"}, {{"RANK", "0"}}});
  n.workers.push_back(Worker{1, 1, 5, {"python3", "train.py"}, {{"RANK", "1"}}});
  p.nodes.push_back(n);
  return p;
}
// Every key of `doc` is in `real` with a value of the same JSON type, through objects and the first
// element of arrays; the path of the first that is not, or "".
std::string missing_in(const nlohmann::json& doc, const nlohmann::json& real, const std::string& path) {
  if (doc.is_object()) {
    if (!real.is_object()) return path;
    for (const auto& [k, v] : doc.items()) {
      if (!real.contains(k)) return path + "/" + k;
      const auto m = missing_in(v, real.at(k), path + "/" + k);
      if (!m.empty()) return m;
    }
    return "";
  }
  if (doc.is_array()) {
    if (!real.is_array()) return path;
    return doc.empty() || real.empty() ? "" : missing_in(doc.front(), real.front(), path + "/0");
  }
  return doc.type() == real.type() || (doc.is_number() && real.is_number()) ? "" : path;
}
}  // namespace

// The example in docs/architecture.md §4 is the contract other programs read: each of its keys
// must be where the plan's JSON has it, with that kind of value.
TEST_CASE("plan_format: docs/architecture.md §4's example has the plan's keys", "[plan][plan_format]") {
  std::ifstream in(std::string(MTRAIN_SOURCE_DIR) + "/docs/architecture.md");
  REQUIRE(in);
  const std::string doc{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto section = doc.find("## §4");
  const auto open = doc.find("```json\n", section), close = doc.find("```", open + 7);
  REQUIRE(open < doc.find("## §5"));
  const auto example = nlohmann::json::parse(doc.substr(open + 8, close - open - 8));
  REQUIRE(example.contains("nodes"));
  CHECK(missing_in(example, to_json(two_rank_plan()), "") == "");
  CHECK(missing_in(nlohmann::json::parse(R"({"nodes": [{"hosts": 1}]})"), to_json(two_rank_plan()), "") ==
        "/nodes/0/hosts");
}

TEST_CASE("plan_format: JSON holds every field of the plan", "[plan][plan_format]") {
  const auto j = to_json(two_rank_plan());
  CHECK(j["version"] == 1);
  CHECK(j["job_id"] == "j1");
  CHECK(j["world_size"] == 2);
  CHECK(j["master_addr"] == "10.0.0.1");
  CHECK(j["master_port"] == 29500);
  CHECK(j["max_restarts"] == 3);
  CHECK(j["rdzv"] == nlohmann::json{{"backend", "static"}, {"endpoint", "10.0.0.1:29500"}});
  const auto& node = j["nodes"].at(0);
  CHECK(node["host"] == "node-a");
  CHECK(node["node_rank"] == 0);
  CHECK(node["gpus"] == nlohmann::json::array({2, 5}));
  CHECK(node["workers"][1]["gpu"] == 5);
  CHECK(node["workers"][0]["argv"][3] == "a b");
  CHECK(node["workers"][1]["env"]["RANK"] == "1");
  LaunchPlan cpu = two_rank_plan();
  cpu.nodes[0].workers[0].gpu.reset();
  CHECK(to_json(cpu)["nodes"][0]["workers"][0]["gpu"].is_null());
  CHECK(to_json(LaunchPlan{})["nodes"] == nlohmann::json::array());
}

TEST_CASE("plan_format: text for people", "[plan][plan_format]") {
  CHECK(to_text(two_rank_plan()) ==
        "job j1: 2 ranks on 1 node, master 10.0.0.1:29500, rendezvous static\n"
        "node 0 node-a: GPUs 2,5\n"
        "  rank 0 (local 0, GPU 2): python3 train.py --name 'a b'\n"
        "  rank 1 (local 1, GPU 5): python3 train.py\n");
  LaunchPlan p = two_rank_plan();
  p.world_size = 1;
  p.nnodes = 2;
  p.nodes[0].gpus.clear();
  p.nodes[0].workers.resize(1);
  p.nodes[0].workers[0].gpu.reset();
  CHECK(to_text(p) ==
        "job j1: 1 rank on 2 nodes, master 10.0.0.1:29500, rendezvous static\n"
        "node 0 node-a: GPUs none (CPU)\n"
        "  rank 0 (local 0): python3 train.py --name 'a b'\n");
}
