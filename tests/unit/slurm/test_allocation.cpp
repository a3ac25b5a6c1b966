#include <catch2/catch.hpp>

#include "lib/core/error.hpp"
#include "lib/slurm/allocation.hpp"

using namespace mtrain::slurm;

namespace {
Env base() {
  return {{"SLURM_JOB_ID", "4242"}, {"SLURM_JOB_NODELIST", "gpu[01-02]"}, {"SLURM_STEP_NODELIST", "gpu[01-02]"},
          {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"}, {"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_NTASKS", "8"},
          {"SLURM_NODEID", "0"}, {"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"}, {"SLURM_CPUS_ON_NODE", "32"}};
}
Env with(Env e, std::initializer_list<std::pair<const std::string, std::string>> kv) {
  for (const auto& p : kv) e[p.first] = p.second;
  return e;
}
}  // namespace

TEST_CASE("allocation: outside Slurm there is none", "[slurm][alloc]") {
  CHECK_FALSE(allocation_from_env({{"PATH", "/bin"}}).has_value());
}

TEST_CASE("allocation: 2 nodes x 4 tasks, task on the second node", "[slurm][alloc]") {
  auto a = allocation_from_env(with(base(), {{"SLURM_NODEID", "1"}, {"SLURM_PROCID", "6"}, {"SLURM_LOCALID", "2"},
                                             {"SLURM_STEP_GPUS", "0,1,2,3"}, {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}}));
  REQUIRE(a);
  CHECK(a->nodes == std::vector<std::string>{"gpu01", "gpu02"});
  CHECK(a->master_addr == "gpu01");
  CHECK(a->ntasks == 8);
  CHECK(a->ntasks_per_node == 4);
  CHECK(a->gpus_on_node == std::vector<int>{0, 1, 2, 3});
  auto e = rank_env_from_slurm(*a);
  CHECK(e["RANK"] == "6");
  CHECK(e["LOCAL_RANK"] == "2");
  CHECK(e["WORLD_SIZE"] == "8");
  CHECK(e["LOCAL_WORLD_SIZE"] == "4");
  CHECK(e["GROUP_RANK"] == "1");
  CHECK(e["GROUP_WORLD_SIZE"] == "2");
  CHECK(e["ROLE_RANK"] == "6");
  CHECK(e["ROLE_NAME"] == "default");
  CHECK(e["MASTER_ADDR"] == "gpu01");
  CHECK(e["MASTER_PORT"] == std::to_string(29500 + 4242 % 2500));
  CHECK(e["CUDA_VISIBLE_DEVICES"] == "0,1,2,3");
  CHECK(e["MTRAIN_GPU"] == "2");
  CHECK(e["MTRAIN_HOST"] == "gpu02");
  CHECK(e["TORCHELASTIC_USE_AGENT_STORE"] == "False");
  CHECK(e["TORCHELASTIC_RUN_ID"] == "4242");
  CHECK(e["OMP_NUM_THREADS"] == "8");
}

TEST_CASE("allocation: uneven layout and cyclic distribution give contiguous ranks", "[slurm][alloc]") {
  Env e = {{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_NODELIST", "n[1-3]"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
           {"SLURM_STEP_NUM_TASKS", "5"}, {"SLURM_NODEID", "1"}, {"SLURM_LOCALID", "1"},
           {"SLURM_PROCID", "4"}};  // srun -m cyclic put procid 4 there
  auto a = allocation_from_env(e);
  REQUIRE(a);
  CHECK(a->tasks_per_node == std::vector<int>{2, 2, 1});
  auto r = rank_env_from_slurm(*a);
  CHECK(r["RANK"] == "3");  // node 0 holds ranks 0-1, node 1 holds 2-3
  CHECK(r["LOCAL_WORLD_SIZE"] == "2");
  CHECK(r["GROUP_WORLD_SIZE"] == "3");
  CHECK(r["MASTER_ADDR"] == "n1");
  CHECK(r.count("CUDA_VISIBLE_DEVICES") == 0);
  CHECK(r["MTRAIN_GPU"] == "");
  // The last node's single task is the last rank.
  auto last = allocation_from_env(with(e, {{"SLURM_NODEID", "2"}, {"SLURM_LOCALID", "0"}, {"SLURM_PROCID", "2"}}));
  CHECK(rank_env_from_slurm(*last)["RANK"] == "4");
}

TEST_CASE("allocation: one agent per node in the batch shell", "[slurm][alloc]") {
  Env e = {{"SLURM_JOB_ID", "100"}, {"SLURM_JOB_NODELIST", "a[1-2]-ib,b3"}, {"SLURM_TASKS_PER_NODE", "1(x3)"},
           {"SLURM_NTASKS", "3"}, {"SLURM_GPUS_ON_NODE", "2"}, {"SLURM_RESTART_COUNT", "2"}};
  auto a = allocation_from_env(e);
  REQUIRE(a);
  CHECK_FALSE(a->in_step);
  CHECK(a->nodes == std::vector<std::string>{"a1-ib", "a2-ib", "b3"});
  CHECK(a->gpus_on_node == std::vector<int>{0, 1});
  CHECK(a->restart_count == 2);
  CHECK(rank_env_from_slurm(*a)["TORCHELASTIC_RESTART_COUNT"] == "2");
}

TEST_CASE("allocation: the step's view wins over the job's", "[slurm][alloc]") {
  Env e = {{"SLURM_JOB_ID", "5"}, {"SLURM_JOB_NODELIST", "n[1-4]"}, {"SLURM_TASKS_PER_NODE", "1(x4)"},
           {"SLURM_STEP_NODELIST", "n[3-4]"}, {"SLURM_STEP_TASKS_PER_NODE", "2,2"}, {"SLURM_STEP_NUM_TASKS", "4"},
           {"SLURM_NODEID", "1"}, {"SLURM_LOCALID", "0"}, {"SLURM_PROCID", "2"}, {"SLURM_JOB_GPUS", "4,5"}};
  auto a = allocation_from_env(e);
  REQUIRE(a);
  CHECK(a->nodes == std::vector<std::string>{"n3", "n4"});
  CHECK(a->master_addr == "n3");
  CHECK(a->gpus_on_node == std::vector<int>{4, 5});
  auto r = rank_env_from_slurm(*a);
  CHECK(r["RANK"] == "2");
  CHECK(r["CUDA_VISIBLE_DEVICES"] == "4,5");
  CHECK(r["MTRAIN_GPU"] == "4");
}

TEST_CASE("allocation: ports are stable per job and differ between jobs", "[slurm][alloc]") {
  CHECK(master_port_for_job("123") == master_port_for_job("123"));
  CHECK(master_port_for_job("123") != master_port_for_job("124"));
  for (const char* id : {"0", "1", "2499", "2500", "999999", "12_3", "77+1"}) {
    int p = master_port_for_job(id);
    CHECK(p >= 29500);
    CHECK(p < 32000);
  }
  auto a = allocation_from_env(with(base(), {{"MASTER_PORT", "40000"}}));
  CHECK(a->master_port == 40000);
  CHECK_THROWS_WITH(allocation_from_env(with(base(), {{"MASTER_PORT", "x"}})), Catch::Contains("MASTER_PORT"));
}

TEST_CASE("allocation: inconsistent environments are clear errors", "[slurm][alloc]") {
  CHECK_THROWS_WITH(allocation_from_env(with(base(), {{"SLURM_STEP_NODELIST", "gpu[01-"}})),
                    Catch::Contains("SLURM_STEP_NODELIST") && Catch::Contains("column 4"));
  CHECK_THROWS_WITH(allocation_from_env(with(base(), {{"SLURM_NODEID", "2"}})), Catch::Contains("SLURM_NODEID=2"));
  CHECK_THROWS_WITH(allocation_from_env(with(base(), {{"SLURM_LOCALID", "4"}})), Catch::Contains("SLURM_LOCALID=4"));
  CHECK_THROWS_WITH(allocation_from_env(with(base(), {{"SLURM_STEP_NUM_TASKS", "9"}})),
                    Catch::Contains("More tasks than the allocation has"));
  CHECK_THROWS_WITH(allocation_from_env(with(base(), {{"SLURM_STEP_TASKS_PER_NODE", "4"}})),
                    Catch::Contains("describes 1 nodes"));
  CHECK_THROWS_WITH(allocation_from_env(with(base(), {{"SLURM_PROCID", "abc"}})), Catch::Contains("SLURM_PROCID"));
  CHECK_THROWS_WITH(allocation_from_env({{"SLURM_JOB_ID", "1"}}), Catch::Contains("SLURM_JOB_NODELIST"));
  // 4 tasks per node but only 2 GPUs visible.
  auto a = allocation_from_env(with(base(), {{"SLURM_STEP_GPUS", "0,1"}}));
  CHECK_THROWS_WITH(rank_env_from_slurm(*a), Catch::Contains("runs 4 tasks") && Catch::Contains("2 GPU"));
}

TEST_CASE("allocation: OMP_NUM_THREADS only when the user has not set it", "[slurm][alloc]") {
  auto a = allocation_from_env(base());
  TaskEnvOptions o;
  o.omp_threads_already_set = true;
  CHECK(rank_env_from_slurm(*a, o).count("OMP_NUM_THREADS") == 0);
  auto b = allocation_from_env(with(base(), {{"SLURM_CPUS_ON_NODE", "2"}}));
  CHECK(rank_env_from_slurm(*b)["OMP_NUM_THREADS"] == "1");
}

TEST_CASE("allocation: an elastic step's rendezvous is the first node's, on the job's own port", "[slurm][alloc]") {
  // One agent per node on 3 nodes, this one the second.
  Env e = with(base(), {{"SLURM_STEP_NODELIST", "node[1-3]"}, {"SLURM_JOB_NODELIST", "node[1-3]"},
                        {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"}, {"SLURM_STEP_NUM_TASKS", "3"}, {"SLURM_NTASKS", "3"},
                        {"SLURM_NODEID", "1"}, {"SLURM_PROCID", "1"}, {"SLURM_STEP_ID", "0"}});
  auto a = allocation_from_env(e);
  REQUIRE(a);
  auto r = step_rendezvous(*a, e);
  CHECK(r.endpoint == "node1:" + std::to_string(27000 + 4242 % 2500));
  CHECK(r.node_name == "node2");
  CHECK(r.run_id == "slurm-4242.0");
  CHECK_FALSE(r.holds_store);
  auto first = allocation_from_env(with(e, {{"SLURM_NODEID", "0"}, {"SLURM_PROCID", "0"}}));
  auto r0 = step_rendezvous(*first, e);
  CHECK(r0.holds_store);
  CHECK(r0.node_name == "node1");
  CHECK(r0.endpoint == r.endpoint);
  // Never the job's MASTER_PORT, for any job id.
  for (const char* id : {"1", "2499", "2500", "123456789", "77_3"})
    CHECK(rendezvous_port_for_job(id) != master_port_for_job(id));
  CHECK(rendezvous_port_for_job("1") == 27001);
}
