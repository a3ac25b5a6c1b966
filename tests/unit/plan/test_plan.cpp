#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <regex>
#include <set>

#include "lib/core/error.hpp"
#include "lib/plan/plan.hpp"

using namespace mtrain::plan;

namespace {
mtrain::config::RankCount nproc(const char* text) {
  return mtrain::config::rank_count_from_text(text, "--nproc-per-node");
}
PlanOptions base() {
  PlanOptions o;
  o.program = {"python3", "train.py"};
  o.job_id = "job-1";
  o.master_addr = "127.0.0.1";
  o.master_port = 29500;
  o.error_file_dir = "/tmp/run";
  return o;
}
HostFacts host(int cpus, std::vector<int> pool) {
  HostFacts f;
  f.hostname = "node-a";
  f.cpu_count = cpus;
  f.gpu_pool = std::move(pool);
  f.gpu_pool_source = "CUDA_VISIBLE_DEVICES";
  return f;
}
}  // namespace

TEST_CASE("every rank gets the torchrun environment, for 1..8 ranks", "[plan]") {
  const std::vector<std::string> keys = {
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
      "ROLE_NAME", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
      "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE",
      "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "MTRAIN_JOB_ID", "MTRAIN_HOST", "MTRAIN_GPU"};
  for (int n = 1; n <= 8; ++n) {
    auto o = base();
    o.nproc_per_node = mtrain::config::RankCount::count(n);
    auto p = build_plan(o, host(8, {}));
    REQUIRE(p.world_size == n);
    REQUIRE(p.nodes.size() == 1);
    REQUIRE(p.nodes[0].workers.size() == size_t(n));
    std::set<std::string> files;
    for (int r = 0; r < n; ++r) {
      const auto& w = p.nodes[0].workers[r];
      for (const auto& k : keys) CHECK(w.env.count(k) == 1);
      CHECK(w.rank == r);
      CHECK(w.env.at("RANK") == std::to_string(r));
      CHECK(w.env.at("LOCAL_RANK") == std::to_string(r));
      CHECK(w.env.at("WORLD_SIZE") == std::to_string(n));
      CHECK(w.env.at("ROLE_RANK") == std::to_string(r));
      CHECK(w.env.at("TORCHELASTIC_USE_AGENT_STORE") == "False");
      CHECK(w.env.at("OMP_NUM_THREADS") == std::to_string(std::max(1, 8 / n)));
      CHECK(w.env.at("CUDA_VISIBLE_DEVICES").empty());
      CHECK(w.env.at("MTRAIN_GPU").empty());
      CHECK_FALSE(w.gpu);
      CHECK(w.argv == std::vector<std::string>{"python3", "train.py"});
      files.insert(w.env.at("TORCHELASTIC_ERROR_FILE"));
    }
    CHECK(files.size() == size_t(n));  // one error file per rank
  }
}

// docs/architecture.md §3 lists the rank environment; a variable the plan sets and §3 does not
// name (MTRAIN_HEARTBEAT_FILE was missing) or one §3 names and no plan sets fails here.
TEST_CASE("docs/architecture.md §3 names exactly the variables a rank gets", "[plan]") {
  std::ifstream in(std::string(MTRAIN_SOURCE_DIR) + "/docs/architecture.md");
  REQUIRE(in);
  const std::string doc{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto from = doc.find("## §3"), to = doc.find("## §4");
  REQUIRE(to != std::string::npos);
  std::set<std::string> named;
  const std::regex var(R"(`([A-Z][A-Z0-9_]+)(=[^`]*)?`)");
  const std::string section = doc.substr(from, to - from);
  for (auto it = std::sregex_iterator(section.begin(), section.end(), var); it != std::sregex_iterator(); ++it)
    named.insert((*it)[1].str());
  // Set by the node agent in a round of the dynamic rendezvous, not by the plan.
  for (const char* agent : {"MTRAIN_RDZV_ROUND", "MTRAIN_RESTART_REASON", "MTRAIN_LOST_NODES"})
    CHECK(named.erase(agent) == 1);
  auto o = base();
  o.nproc_per_node = nproc("2");
  o.heartbeat_file = true;
  std::set<std::string> set_by_plan;
  const auto plan = build_plan(o, host(8, {}));
  for (const auto& kv : plan.nodes[0].workers[1].env) set_by_plan.insert(kv.first);
  CHECK(named == set_by_plan);
}

TEST_CASE("OMP_NUM_THREADS is left alone when the user set it", "[plan]") {
  auto f = host(8, {});
  f.omp_num_threads_set = true;
  auto o = base();
  o.nproc_per_node = nproc("2");
  CHECK(build_plan(o, f).nodes[0].workers[0].env.count("OMP_NUM_THREADS") == 0);
}

TEST_CASE("TORCH_NCCL_ASYNC_ERROR_HANDLING=1 as torchrun 2.x sets it, unless the user set it", "[plan]") {
  auto f = host(8, {});
  auto o = base();
  o.nproc_per_node = nproc("2");
  CHECK(build_plan(o, f).nodes[0].workers[1].env.at("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1");
  f.nccl_async_error_handling_set = true;
  CHECK(build_plan(o, f).nodes[0].workers[1].env.count("TORCH_NCCL_ASYNC_ERROR_HANDLING") == 0);
}

TEST_CASE("DeepSpeed's CROSS_RANK, CROSS_SIZE and LOCAL_SIZE mirror GROUP_RANK, GROUP_WORLD_SIZE, LOCAL_WORLD_SIZE", "[plan]") {
  auto o = base();
  o.nproc_per_node = nproc("3");
  o.nnodes = 2;
  o.node_rank = 1;
  o.master_addr = "10.0.0.1";
  const auto plan = build_plan(o, host(8, {}));  // kept: a reference into the temporary would dangle
  const auto& e = plan.nodes[0].workers[2].env;
  CHECK(e.at("CROSS_RANK") == "1");
  CHECK(e.at("CROSS_SIZE") == "2");
  CHECK(e.at("LOCAL_SIZE") == "3");
  CHECK(e.at("RANK") == "5");
}

TEST_CASE("rank counts: default, auto, cpu, gpu", "[plan]") {
  auto o = base();
  CHECK(build_plan(o, host(4, {})).world_size == 1);
  CHECK(build_plan(o, host(4, {0, 1, 2})).world_size == 3);
  o.nproc_per_node = nproc("auto");  // the default, said the same way: one per GPU, else 1
  CHECK(build_plan(o, host(4, {})).world_size == 1);
  CHECK(build_plan(o, host(4, {5, 6})).world_size == 2);
  o.nproc_per_node = nproc("cpu");
  auto p = build_plan(o, host(3, {0, 1}));
  CHECK(p.world_size == 3);
  CHECK(p.nodes[0].gpus.empty());
  o.nproc_per_node = nproc("gpu");
  CHECK_THROWS_WITH(build_plan(o, host(4, {})), Catch::Contains("no GPUs"));
  // Not a rank count: refused where the setting is read, before any plan.
  CHECK_THROWS_WITH(nproc("two"), Catch::Contains("'two'"));
  CHECK_THROWS(nproc("0"));
  CHECK_THROWS_WITH(nproc("65537"), Catch::Contains("at most 65536"));
}

TEST_CASE("device kinds: cpu assigns no GPU, gpu requires one, auto takes what is there", "[plan]") {
  auto o = base();
  o.device = mtrain::config::DeviceKind::Cpu;
  auto p = build_plan(o, host(4, {0, 1}));
  CHECK(p.world_size == 1);
  CHECK(p.nodes[0].gpus.empty());
  for (const auto& w : p.nodes[0].workers) CHECK(w.env.at("CUDA_VISIBLE_DEVICES").empty());
  o.nproc_per_node = nproc("2");
  CHECK(build_plan(o, host(4, {0, 1})).nodes[0].gpus.empty());
  o.gpus = "1";
  CHECK_THROWS_WITH(build_plan(o, host(4, {0, 1})), Catch::Contains("--device cpu runs CPU ranks"));
  o.gpus = "";
  o.nproc_per_node = nproc("gpu");
  CHECK_THROWS_WITH(build_plan(o, host(4, {0, 1})), Catch::Contains("--device cpu with --nproc-per-node gpu"));
  o.nproc_per_node.reset();
  o.device = mtrain::config::DeviceKind::Gpu;
  CHECK_THROWS_WITH(build_plan(o, host(4, {})), Catch::Contains("--device gpu: this host has no GPUs"));
  CHECK(build_plan(o, host(4, {3, 5})).world_size == 2);
  o.device = mtrain::config::DeviceKind::Auto;
  CHECK(build_plan(o, host(4, {3, 5})).world_size == 2);
  CHECK(build_plan(o, host(4, {})).world_size == 1);
}

TEST_CASE("GPU selection: pool, --gpus, --include, --exclude", "[plan]") {
  auto o = base();
  auto p = build_plan(o, host(8, {2, 3, 5}));
  CHECK(p.nodes[0].gpus == std::vector<int>{2, 3, 5});
  for (int i = 0; i < 3; ++i) {
    const auto& w = p.nodes[0].workers[i];
    CHECK(w.env.at("CUDA_VISIBLE_DEVICES") == "2,3,5");  // LOCAL_RANK indexes into it
    CHECK(*w.gpu == p.nodes[0].gpus[i]);
    CHECK(w.env.at("MTRAIN_GPU") == std::to_string(*w.gpu));
  }
  o.gpus = "5,2";
  p = build_plan(o, host(8, {2, 3, 5}));
  CHECK(p.nodes[0].gpus == std::vector<int>{5, 2});
  CHECK(p.world_size == 2);
  o.gpus.clear();
  o.include = "localhost:0,2";
  p = build_plan(o, host(8, {0, 1, 2, 3}));
  CHECK(p.nodes[0].gpus == std::vector<int>{0, 2});
  CHECK(p.nodes[0].workers[1].env.at("CUDA_VISIBLE_DEVICES") == "0,2");
  o.include.clear();
  o.exclude = "localhost:1";
  p = build_plan(o, host(8, {0, 1, 2, 3}));
  CHECK(p.nodes[0].gpus == std::vector<int>{0, 2, 3});
  o.nproc_per_node = nproc("2");
  o.exclude.clear();
  p = build_plan(o, host(8, {0, 1, 2, 3}));  // implicit pool: the first N GPUs
  CHECK(p.nodes[0].gpus == std::vector<int>{0, 1});
}

TEST_CASE("bad GPU selections are errors that name the value", "[plan]") {
  auto o = base();
  o.gpus = "7";
  CHECK_THROWS_WITH(build_plan(o, host(8, {0, 1})), Catch::Contains("GPU 7 is not available") && Catch::Contains("0,1"));
  CHECK_THROWS_WITH(build_plan(o, host(8, {})), Catch::Contains("no GPUs"));
  o.gpus.clear();
  o.exclude = "localhost:0,1";
  CHECK_THROWS_WITH(build_plan(o, host(8, {0, 1})), Catch::Contains("leaves no slots"));
  o.exclude.clear();
  o.include = "localhost:0,x";
  CHECK_THROWS_WITH(build_plan(o, host(8, {0, 1})), Catch::Contains("column 13"));
  o.gpus = "0";
  CHECK_THROWS_WITH(build_plan(o, host(8, {0, 1})), Catch::Contains("cannot be combined"));
  o.include.clear();
  o.gpus = "0,1";
  o.nproc_per_node = nproc("3");
  CHECK_THROWS_WITH(build_plan(o, host(8, {0, 1})), Catch::Contains("does not match"));
  o.gpus.clear();
  CHECK_THROWS_WITH(build_plan(o, host(8, {0, 1})), Catch::Contains("more ranks than GPUs"));
}

TEST_CASE("program forms: plain, -m, --local_rank, bundled trainer", "[plan]") {
  auto o = base();
  o.nproc_per_node = nproc("2");
  o.local_rank_arg = true;
  auto p = build_plan(o, host(2, {}));
  CHECK(p.nodes[0].workers[1].argv.back() == "--local_rank=1");
  o.local_rank_arg = false;
  o.module = true;
  o.program = {"pkg.train", "--x"};
  p = build_plan(o, host(2, {}));
  CHECK(p.nodes[0].workers[0].argv == std::vector<std::string>{"python3", "-u", "-m", "pkg.train", "--x"});
  o.module = false;
  // torchrun's rule: a .py program runs with the interpreter (unbuffered) unless --no-python.
  o.python = "/opt/py/bin/python3";
  o.program = {"train.py", "--lr", "1"};
  o.extra_args = {"--deepspeed_config", "/run/ds_config.json"};
  o.extra_env = {{"MTRAIN_JOB_FILE", "/run/job.json"}};
  p = build_plan(o, host(2, {}));
  CHECK(p.nodes[0].workers[0].argv == std::vector<std::string>{"/opt/py/bin/python3", "-u", "train.py", "--lr", "1",
                                                               "--deepspeed_config", "/run/ds_config.json"});
  CHECK(p.nodes[0].workers[1].env.at("MTRAIN_JOB_FILE") == "/run/job.json");
  o.no_python = true;
  p = build_plan(o, host(2, {}));
  CHECK(p.nodes[0].workers[0].argv.front() == "train.py");
  o.no_python = false;
  o.program = {"./train.sh"};  // not .py: executed itself
  p = build_plan(o, host(2, {}));
  CHECK(p.nodes[0].workers[0].argv.front() == "./train.sh");
  o.extra_args.clear();
  o.extra_env.clear();
  o.program.clear();
  o.worker_argv = {"/opt/mtrain-worker", "--job", "/tmp/j.json"};
  p = build_plan(o, host(2, {}));
  CHECK(p.nodes[0].workers[0].argv == o.worker_argv);
}

TEST_CASE("restart attempts renumber the environment", "[plan]") {
  auto o = base();
  auto p = build_plan(o, host(2, {}));
  auto e = attempt_env(p.nodes[0].workers[0], 2, "/tmp/run");
  CHECK(e.at("TORCHELASTIC_RESTART_COUNT") == "2");
  CHECK(e.at("TORCHELASTIC_ERROR_FILE") == "/tmp/run/attempt_2/0/error.json");
}

TEST_CASE("plan JSON has the contract's shape", "[plan]") {
  auto o = base();
  o.nproc_per_node = nproc("2");
  auto j = to_json(build_plan(o, host(2, {})));
  CHECK(j["version"] == 1);
  CHECK(j["world_size"] == 2);
  CHECK(j["nnodes"] == 1);
  CHECK(j["rdzv"]["backend"] == "static");
  CHECK(j["rdzv"]["endpoint"] == "127.0.0.1:29500");
  CHECK(j["nodes"][0]["gpus"].empty());
  CHECK(j["nodes"][0]["workers"][1]["gpu"].is_null());
  CHECK(j["nodes"][0]["workers"][1]["env"]["RANK"] == "1");
}

TEST_CASE("static multi-node: ranks contiguous per node, node 0 hosts rank 0", "[plan]") {
  for (int nnodes = 1; nnodes <= 4; ++nnodes) {
    for (int nr = 0; nr < nnodes; ++nr) {
      auto o = base();
      o.nproc_per_node = nproc("3");
      o.nnodes = nnodes;
      o.node_rank = nr;
      o.master_addr = "10.0.0.1";
      auto p = build_plan(o, host(4, {}));
      CHECK(p.world_size == 3 * nnodes);
      const auto& n = p.nodes.at(0);
      CHECK(n.node_rank == nr);
      for (int lr = 0; lr < 3; ++lr) {
        CHECK(n.workers[lr].rank == nr * 3 + lr);
        CHECK(n.workers[lr].env.at("GROUP_RANK") == std::to_string(nr));
        CHECK(n.workers[lr].env.at("GROUP_WORLD_SIZE") == std::to_string(nnodes));
        CHECK(n.workers[lr].env.at("LOCAL_WORLD_SIZE") == "3");
        CHECK(n.workers[lr].env.at("MASTER_ADDR") == "10.0.0.1");
      }
    }
  }
  auto o = base();
  o.master_addr.clear();
  o.nnodes = 2;
  CHECK_THROWS_WITH(build_plan(o, host(4, {})), Catch::Contains("needs --master-addr"));
  o.master_addr = "h";
  o.node_rank = 2;
  CHECK_THROWS_WITH(build_plan(o, host(4, {})), Catch::Contains("outside 0..1"));
}

TEST_CASE("cluster plan over uneven hostfile nodes: ranks contiguous per node, rank 0 on the master", "[plan]") {
  auto o = base();
  o.master_addr.clear();
  std::vector<ClusterNode> nodes{{"worker-0", {0, 1, 2}}, {"worker-1", {1}}, {"worker-2", {0, 2}}};
  auto p = build_cluster_plan(o, nodes, host(8, {}));
  CHECK(p.world_size == 6);
  CHECK(p.nnodes == 3);
  CHECK(p.master_addr == "worker-0");
  REQUIRE(p.nodes.size() == 3);
  std::vector<int> firsts;
  for (const auto& n : p.nodes) firsts.push_back(n.workers.front().rank);
  CHECK(firsts == std::vector<int>{0, 3, 4});
  CHECK(p.nodes[1].gpus == std::vector<int>{1});
  CHECK(p.nodes[2].workers[1].gpu == 2);
  CHECK(p.nodes[2].workers[1].env.at("RANK") == "5");
  CHECK(p.nodes[2].workers[1].env.at("LOCAL_WORLD_SIZE") == "2");
  CHECK(p.nodes[2].workers[1].env.at("GROUP_RANK") == "2");
  CHECK(p.nodes[2].workers[1].env.at("WORLD_SIZE") == "6");
  CHECK(p.nodes[2].workers[1].env.at("MTRAIN_HOST") == "worker-2");
  CHECK(p.nodes[2].workers[1].env.at("CUDA_VISIBLE_DEVICES") == "0,2");
  CHECK(p.nodes[0].workers[0].env.at("MASTER_ADDR") == "worker-0");
  o.nproc_per_node = nproc("cpu");
  auto cpu = build_cluster_plan(o, nodes, host(8, {}));
  CHECK(cpu.nodes[0].gpus.empty());
  CHECK_FALSE(cpu.nodes[0].workers[0].gpu);
  CHECK(cpu.world_size == 6);
}

TEST_CASE("one node of a laid-out world: first rank and world size come from the placement", "[plan]") {
  auto o = base();
  o.nproc_per_node = nproc("1");
  o.nnodes = 3;
  o.node_rank = 1;
  o.first_rank = 3;
  o.world_size = 6;
  o.node_name = "worker-1";
  auto p = build_plan(o, host(4, {}));
  REQUIRE(p.nodes[0].workers.size() == 1);
  CHECK(p.nodes[0].workers[0].rank == 3);
  CHECK(p.nodes[0].host == "worker-1");
  CHECK(p.nodes[0].workers[0].env.at("WORLD_SIZE") == "6");
  CHECK(p.nodes[0].workers[0].env.at("GROUP_WORLD_SIZE") == "3");
  o.nproc_per_node = nproc("4");  // 3 + 4 > 6: the node does not fit the world it was given
  CHECK_THROWS_WITH(build_plan(o, host(4, {})), Catch::Contains("the world has 6 ranks"));
  o.first_rank = 0;  // a world of one rank: "1 rank", not "1 ranks" (issue 45)
  o.world_size = 1;
  o.node_rank = 0;
  o.nproc_per_node = nproc("2");
  CHECK_THROWS_WITH(build_plan(o, host(4, {})), Catch::Contains("the world has 1 rank") && !Catch::Contains("1 ranks"));
}

TEST_CASE("the heartbeat file follows the attempt like the error file", "[plan]") {
  auto o = base();
  o.nproc_per_node = nproc("2");
  o.heartbeat_file = true;
  auto p = build_plan(o, host(4, {}));
  const auto& w = p.nodes[0].workers[1];
  CHECK(w.env.at("MTRAIN_HEARTBEAT_FILE") == "/tmp/run/attempt_0/1/heartbeat");
  CHECK(attempt_env(w, 2, "/tmp/run").at("MTRAIN_HEARTBEAT_FILE") == "/tmp/run/attempt_2/1/heartbeat");
  o.heartbeat_file = false;
  CHECK(build_plan(o, host(4, {})).nodes[0].workers[0].env.count("MTRAIN_HEARTBEAT_FILE") == 0);
}
