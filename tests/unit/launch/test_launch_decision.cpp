// decide_launch over in-memory probes: every mode `mtrain launch` can take and each of its
// refusals, without touching the system (no hostfile read, no port bound, nothing started).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include "lib/core/error.hpp"
#include "lib/launch/launch_decision.hpp"
#include "fakes/fake_launch_probes.hpp"
#include "lib/config/registry.hpp"

using namespace mtrain;
using namespace mtrain::launch;
using mtrain::testing::FakeProbes;

namespace {

const std::string kToken = "0123456789abcdef0123456789abcdef";

LaunchEnvironment environment(EnvMap vars = {}) {
  vars.emplace("TMPDIR", "/scratch");
  return {vars, "/home/u"};
}

LaunchOptions program(std::vector<std::string> argv = {"/bin/train"}) {
  LaunchOptions o;
  o.plan.program = std::move(argv);
  o.plan.nproc_per_node = mtrain::config::RankCount::count(2);
  o.plan.device = config::DeviceKind::Cpu;
  return o;
}

topology::Inventory two_hosts() { return {{"worker-0", "", {0, 1}}, {"worker-1", "alice", {0, 1, 2}}}; }

// The refusal's message, or "" when decide_launch accepted the input.
std::string refusal(LaunchOptions o, const LaunchEnvironment& env, FakeProbes& probes) {
  try {
    decide_launch(std::move(o), env, probes);
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("decide_launch, local: every rank here, a private run folder, the master port checked", "[launch][decision]") {
  FakeProbes probes;
  auto d = decide_launch(program(), environment(), probes);
  CHECK(d.mode == LaunchMode::local);
  CHECK(std::string(mode_name(d.mode)) == "local");
  const auto& p = d.options.plan;
  CHECK(p.job_id == "mtrain-0000beef");
  CHECK(p.master_addr == "127.0.0.1");
  CHECK(p.master_port == 29500);
  CHECK(p.nnodes == 1);
  CHECK(d.temp_run_dir);
  CHECK(d.run_dir == "/scratch/mtrain-0000beef.r4nd0mr4nd0mr4nd");
  CHECK(p.error_file_dir == d.run_dir);
  CHECK(d.job_file == d.run_dir + "/job.json");
  CHECK(p.heartbeat_file);  // the default watch: nobody exported a heartbeat file
  CHECK(d.plan.world_size == 2);
  CHECK(d.program_path == "/bin/train");
  CHECK(!d.agent);
  CHECK(probes.asked.back() == "port 127.0.0.1:29500");
  CHECK(probes.notes.empty());
}

TEST_CASE("decide_launch, local: ports, log dir, TMPDIR and the heartbeat file", "[launch][decision]") {
  FakeProbes probes;
  SECTION("--master-port 0 and auto take a free port") {
    for (std::string text : {"0", "auto"}) {
      auto o = program();
      o.master_port = mtrain::config::master_port_from_text(text, "--master-port");
      CHECK(decide_launch(o, environment(), probes).options.plan.master_port >= 31000);
    }
  }
  SECTION("a port that is no port is refused where the setting is read") {
    for (std::string text : {"65536", "http", "-1"})
      CHECK_THROWS_WITH(mtrain::config::master_port_from_text(text, "--master-port"),
                        Catch::Contains("is not a TCP port"));
  }
  SECTION("a taken master port is refused before anything starts") {
    probes.taken_ports = {29500};
    CHECK(refusal(program(), environment(), probes) == "port 29500 is taken");
  }
  SECTION("--log-dir: the run folder is <log-dir>/<job>, kept, and the logs go there") {
    auto o = program();
    o.output.log_dir = "logs";
    o.plan.job_id = "exp1";
    auto d = decide_launch(o, environment(), probes);
    CHECK(!d.temp_run_dir);
    CHECK(d.run_dir == "logs/exp1");
    CHECK(d.options.output.log_dir == "logs/exp1");
  }
  SECTION("a relative TMPDIR is taken from the working directory; none is /tmp") {
    CHECK(decide_launch(program(), {{{"TMPDIR", "t"}}, "/home/u"}, probes).run_dir ==
          "/home/u/t/mtrain-0000beef.r4nd0mr4nd0mr4nd");
    CHECK(decide_launch(program(), {{}, "/home/u"}, probes).run_dir == "/tmp/mtrain-0000beef.r4nd0mr4nd0mr4nd");
  }
  SECTION("a heartbeat file the user exported is left alone unless --heartbeat-timeout is given") {
    auto env = environment({{"MTRAIN_HEARTBEAT_FILE", "/x"}});
    CHECK(!decide_launch(program(), env, probes).options.plan.heartbeat_file);
    auto o = program();
    o.heartbeat_timeout_s = 30;
    CHECK(decide_launch(o, env, probes).options.plan.heartbeat_file);
  }
  SECTION("a job id that is a path is refused, naming where it came from") {
    auto o = program();
    o.plan.job_id = "../x";
    CHECK(contains(refusal(o, environment(), probes), "--job-id"));
  }
}

TEST_CASE("decide_launch, --dry-run: the plan only, nothing checked on the system", "[launch][decision]") {
  FakeProbes probes;
  auto o = program({"train.py"});
  o.dry_run = true;
  probes.readable_files.clear();  // a real launch would refuse it
  probes.taken_ports = {29500};
  auto d = decide_launch(o, environment(), probes);
  CHECK(d.mode == LaunchMode::local);
  CHECK(d.plan.world_size == 2);
  CHECK(d.program_path.empty());
  CHECK(d.options.plan.python == "/usr/bin/python3");  // shown resolved
  for (const auto& a : probes.asked) CHECK(!contains(a, "port"));
}

TEST_CASE("decide_launch, programs: Python, the bundled trainer and the job it reads", "[launch][decision]") {
  FakeProbes probes;
  SECTION("PROGRAM.py runs with the resolved interpreter and must be readable") {
    auto d = decide_launch(program({"train.py"}), environment(), probes);
    CHECK(d.options.plan.python == "/usr/bin/python3");
    CHECK(d.program_path == "/usr/bin/python3");
    probes.readable_files.clear();
    CHECK(contains(refusal(program({"train.py"}), environment(), probes), "program 'train.py' does not exist"));
  }
  SECTION("no interpreter: refused, naming the program and --python") {
    probes.programs.erase("python3");
    probes.programs.erase("/usr/bin/python3");
    auto why = refusal(program({"train.py"}), environment(), probes);
    CHECK(contains(why, "train.py runs with Python, but python3 was not found"));
  }
  SECTION("no program and no mtrain-worker: refused") {
    CHECK(contains(refusal(program({}), environment(), probes), "mtrain-worker) is not installed"));
  }
  SECTION("the bundled trainer reads job.json from the run folder; its checks see the world size") {
    auto o = program({});
    o.worker_path = "/opt/mtrain-worker";
    config::json job = config::job_spec(config::job_registry(), config::resolve(config::job_registry(), {}).job);
    config::set(job, "train.work_dir", "runs/w");
    o.job_spec_json = job.dump();
    auto d = decide_launch(o, environment(), probes);
    CHECK(d.options.plan.worker_argv == std::vector<std::string>{"/opt/mtrain-worker", "--job", d.job_file});
    CHECK(probes.jobs_checked == std::vector<long long>{2});
    CHECK(probes.work_dirs_checked == std::vector<std::string>{"runs/w"});  // before any rank starts
    CHECK(d.program_path == "/opt/mtrain-worker");
  }
  SECTION("a program with a resolved job gets MTRAIN_JOB_FILE; deepspeed its config file") {
    auto o = program();
    o.job_spec_json = "{}";
    o.pass_config = config::PassConfig::Deepspeed;
    auto d = decide_launch(o, environment(), probes);
    CHECK(d.options.plan.extra_env.at("MTRAIN_JOB_FILE") == d.job_file);
    CHECK(d.options.plan.extra_args == std::vector<std::string>{"--deepspeed_config", d.ds_file});
    CHECK(probes.jobs_checked.empty());  // the program's own business
  }
}

TEST_CASE("decide_launch, slurm task: exec as the rank srun started", "[launch][decision][slurm]") {
  FakeProbes probes;
  auto o = program();
  o.launcher = config::LauncherKind::SlurmTask;
  o.plan.max_restarts = 2;
  auto d = decide_launch(o, environment({{"OMP_NUM_THREADS", "4"}}), probes);
  CHECK(d.mode == LaunchMode::slurm_task);
  CHECK(d.slurm_task.max_restarts == 2);
  CHECK(d.slurm_task.omp_threads_already_set);
  CHECK(probes.asked.empty());  // nothing probed: srun placed this task
  o.plan.program.clear();
  CHECK(contains(refusal(o, environment(), probes), "--launcher slurm-task needs a program"));
}

TEST_CASE("decide_launch, slurm node: nodes, node rank, master and job id from the step", "[launch][decision][slurm]") {
  FakeProbes probes;
  EnvMap step{{"SLURM_JOB_ID", "77"},         {"SLURM_STEP_ID", "3"},
              {"SLURM_STEP_NODELIST", "n[1-3]"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"},
              {"SLURM_NODEID", "2"},          {"MASTER_PORT", "23456"}};
  auto d = decide_launch(program(), environment(step), probes);
  CHECK(d.mode == LaunchMode::slurm_node);
  const auto& p = d.options.plan;
  CHECK(p.nnodes == 3);
  CHECK(p.node_rank == 2);
  CHECK(p.master_addr == "n1");
  CHECK(p.master_port == 23456);
  CHECK(p.job_id == "slurm-77.3");
  CHECK(d.plan.nodes.at(0).node_rank == 2);
  for (const auto& a : probes.asked) CHECK(!contains(a, "port"));  // the master is node 0's

  SECTION("--master-port given wins over Slurm's") {
    auto o = program();
    o.master_port = mtrain::config::MasterPort::port(29999);
    o.master_port_given = true;
    CHECK(decide_launch(o, environment(step), probes).options.plan.master_port == 29999);
  }
  SECTION("--launcher local ignores Slurm") {
    auto o = program();
    o.launcher = config::LauncherKind::Local;
    CHECK(decide_launch(o, environment(step), probes).mode == LaunchMode::local);
  }
  SECTION("--launcher slurm outside a one-task-per-node step is refused") {
    auto o = program();
    o.launcher = config::LauncherKind::Slurm;
    CHECK(contains(refusal(o, environment(), probes), "needs to run inside an srun step"));
    EnvMap batch{{"SLURM_JOB_ID", "77"}, {"SLURM_JOB_NODELIST", "n[1-3]"}};  // the batch shell
    CHECK(contains(refusal(o, environment(batch), probes), "needs to run inside an srun step"));
  }
}

TEST_CASE("decide_launch, elastic Slurm step: the node rendezvous from the allocation", "[launch][decision][slurm]") {
  FakeProbes probes;
  EnvMap step{{"SLURM_JOB_ID", "77"},         {"SLURM_STEP_ID", "3"},
              {"SLURM_STEP_NODELIST", "n[1-3]"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"},
              {"SLURM_NODEID", "2"},          {"MASTER_PORT", "23456"}};
  step["MTRAIN_RDZV_TOKEN"] = "0123456789abcdef0123";  // the batch script exports it
  auto o = program();
  o.multi.nnodes = "2:3";
  auto d = decide_launch(o, environment(step), probes);
  CHECK(d.mode == LaunchMode::dynamic_node);
  REQUIRE(d.agent.has_value());
  CHECK(d.agent->store_elsewhere);  // node 2 joins the first node's store
  CHECK(d.options.multi.node_name == "n3");
  CHECK(d.options.plan.rdzv_id == "slurm-77.3");
  CHECK(d.options.multi.rdzv_endpoint.rfind("n1:", 0) == 0);

  step["SLURM_NODEID"] = "0";
  auto first = decide_launch(o, environment(step), probes);
  REQUIRE(first.agent.has_value());
  CHECK(!first.agent->store_elsewhere);  // the first node holds the store
}

TEST_CASE("decide_launch, elastic Slurm step on etcd: the members given, no store on the first node",
          "[launch][decision][slurm][etcd]") {
  FakeProbes probes;
  EnvMap step{{"SLURM_JOB_ID", "77"},
              {"SLURM_STEP_ID", "3"},
              {"SLURM_STEP_NODELIST", "n[1-3]"},
              {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"},
              {"SLURM_NODEID", "0"},
              {"MASTER_PORT", "23456"},
              {"MTRAIN_RDZV_TOKEN", "0123456789abcdef0123"}};
  auto o = program();
  o.multi.nnodes = "2:3";
  o.multi.rdzv_backend = config::RdzvBackend::Etcd;
  o.multi.rdzv_endpoint = "e1:2379,e2:2379,e3";
  auto d = decide_launch(o, environment(step), probes);
  REQUIRE(d.agent.has_value());
  CHECK(d.agent->etcd);
  REQUIRE(d.agent->etcd_client.endpoints.size() == 3);
  CHECK(d.agent->etcd_client.endpoints[2].str() == "e3:2379");
  CHECK(d.options.multi.node_name == "n1");
  CHECK(d.options.plan.rdzv_id == "slurm-77.3");  // every node's run id alike
  // Without the members the first node's address would be taken for an etcd member.
  o.multi.rdzv_endpoint.clear();
  CHECK(contains(refusal(o, environment(step), probes), "--rdzv-backend etcd needs --rdzv-endpoint"));
}

TEST_CASE("decide_launch, static node by hand: --nnodes N --node-rank K", "[launch][decision]") {
  FakeProbes probes;
  auto o = program();
  o.multi.nnodes = "2";
  o.plan.node_rank = 1;
  o.multi.node_rank_given = true;
  o.plan.master_addr = "10.0.0.1";
  auto d = decide_launch(o, environment(), probes);
  CHECK(d.mode == LaunchMode::static_node);
  CHECK(d.options.plan.nnodes == 2);
  CHECK(d.plan.world_size == 4);
  for (const auto& a : probes.asked) CHECK(!contains(a, "port"));  // node 1 does not hold the master
  o.multi.nnodes = "1:3";
  CHECK(contains(refusal(o, environment(), probes), "--nnodes 1:3 (MIN:MAX) needs the dynamic rendezvous"));
}

TEST_CASE("decide_launch, static nodes with --max-restarts: agents of a fixed-size store on node 0",
          "[launch][decision][rdzv]") {
  FakeProbes probes;
  auto o = program();
  o.multi.nnodes = "3";
  o.multi.rdzv_port = 29411;
  o.plan.master_addr = "10.0.0.1";
  o.plan.max_restarts = 2;
  o.multi.node_rank_given = true;
  SECTION("node 1: joins node 0's store as node-1, keeps its rank; the same derived token on every node") {
    o.plan.node_rank = 1;
    auto d = decide_launch(o, environment(), probes);
    CHECK(d.mode == LaunchMode::static_node);
    REQUIRE(d.agent);
    CHECK(d.agent->endpoint.str() == "10.0.0.1:29411");
    CHECK(d.agent->nnodes.min == 3);
    CHECK(d.agent->nnodes.max == 3);
    CHECK(d.agent->node_name == "node-1");
    CHECK(d.agent->expected_hosts == std::vector<std::string>{"node-0", "node-1", "node-2"});
    CHECK(d.agent->expected_node_rank == 1);
    CHECK(d.agent->store_elsewhere);
    CHECK(d.agent->max_restarts == 2);
    CHECK(d.agent->scale_up == ScaleUp::off);
    CHECK(d.options.plan.master_addr == "10.0.0.1");  // as given, not from the agreement
    CHECK(d.run_dir == "/scratch/mtrain-0000beef.r4nd0mr4nd0mr4nd/node-1");
    CHECK(d.plan.nodes.at(0).node_rank == 1);  // this node's part of the static job
    CHECK(d.plan.world_size == 6);
    REQUIRE(probes.notes.size() == 1);
    CHECK(contains(probes.notes[0], "MTRAIN_RDZV_TOKEN is unset"));
    for (const auto& a : probes.asked) CHECK(!contains(a, "port"));  // node 0 holds both ports
    FakeProbes other;
    o.plan.node_rank = 2;
    CHECK(decide_launch(o, environment(), other).agent->token == d.agent->token);
  }
  SECTION("node 0 holds the store: its master and store ports are checked before anything starts") {
    o.plan.node_rank = 0;
    auto d = decide_launch(o, environment({{"MTRAIN_RDZV_TOKEN", kToken}}), probes);
    REQUIRE(d.agent);
    CHECK(!d.agent->store_elsewhere);
    CHECK(d.agent->token == kToken);
    CHECK(probes.notes.empty());
    CHECK(std::count(probes.asked.begin(), probes.asked.end(), "port 10.0.0.1:29500") == 1);
    CHECK(std::count(probes.asked.begin(), probes.asked.end(), "port 10.0.0.1:29411") == 1);
    probes.taken_ports = {29411};
    CHECK(contains(refusal(o, environment(), probes), "port 29411 is taken"));
  }
  SECTION("with a hostfile: the hosts' names and order; without restarts, or on one node, no agent") {
    probes.hostfiles["hosts"] = two_hosts();
    auto h = o;
    h.multi.nnodes.clear();
    h.multi.hostfile = "hosts";
    h.plan.master_addr.clear();
    h.plan.nproc_per_node.reset();
    h.plan.node_rank = 1;
    auto d = decide_launch(h, environment(), probes);
    REQUIRE(d.agent);
    CHECK(d.agent->node_name == "worker-1");
    CHECK(d.agent->expected_hosts == std::vector<std::string>{"worker-0", "worker-1"});
    CHECK(d.agent->endpoint.str() == "worker-0:29411");
    CHECK(d.plan.nodes.at(0).workers.size() == 3);
    h.plan.max_restarts = 0;
    CHECK(!decide_launch(h, environment(), probes).agent);
    auto one = o;
    one.multi.nnodes = "1";
    one.plan.node_rank = 0;
    CHECK(!decide_launch(one, environment(), probes).agent);
  }
}

TEST_CASE("decide_launch, hostfile: node K of its static world, or this machine alone", "[launch][decision]") {
  FakeProbes probes;
  probes.hostfiles["hosts"] = two_hosts();
  SECTION("--node-rank K: this node's slots and place in the hostfile's world") {
    auto o = program();
    o.plan.nproc_per_node.reset();
    o.multi.hostfile = "hosts";
    o.plan.node_rank = 1;
    o.multi.node_rank_given = true;
    auto d = decide_launch(o, environment(), probes);
    CHECK(d.mode == LaunchMode::static_node);
    const auto& p = d.options.plan;
    CHECK(p.nnodes == 2);
    CHECK(p.first_rank == 2);
    CHECK(p.world_size == 5);
    CHECK(p.master_addr == "worker-0");
    CHECK(d.plan.nodes.at(0).workers.size() == 3);
    o.plan.node_rank = 2;
    CHECK(contains(refusal(o, environment(), probes), "--node-rank 2 is outside the 2 hosts"));
  }
  SECTION("one host that is this machine: its slots here, no ssh") {
    probes.hostfiles["me"] = {{"node-a", "", {0, 1, 2}}};
    auto o = program();
    o.plan.nproc_per_node.reset();
    o.multi.hostfile = "me";
    auto d = decide_launch(o, environment(), probes);
    CHECK(d.mode == LaunchMode::local);
    CHECK(d.options.plan.master_addr == "127.0.0.1");
    CHECK(d.plan.world_size == 3);
  }
  SECTION("a missing hostfile runs here, saying so; unless a filter names another host") {
    auto o = program();
    o.multi.hostfile = "absent";
    auto d = decide_launch(o, environment(), probes);
    CHECK(d.mode == LaunchMode::local);
    CHECK(!d.hosts);
    REQUIRE(probes.notes.size() == 1);
    CHECK(contains(probes.notes[0], "hostfile absent not found; running on this machine only"));
    o.plan.include = "worker-3";
    CHECK(refusal(o, environment(), probes) == "absent: cannot read the hostfile");  // needed then
  }
  SECTION("--num-nodes without a hostfile is refused") {
    auto o = program();
    o.multi.num_nodes = 2;
    CHECK(contains(refusal(o, environment(), probes), "--num-nodes/--num-gpus choose hosts from a hostfile"));
  }
}

TEST_CASE("decide_launch, ssh launcher: other hosts get agents over ssh, the store here", "[launch][decision][ssh]") {
  FakeProbes probes;
  probes.hostfiles["hosts"] = two_hosts();
  probes.routes["worker-0"] = "10.1.0.5";
  auto o = program();
  o.multi.hostfile = "hosts";
  auto d = decide_launch(o, environment(), probes);
  CHECK(d.mode == LaunchMode::ssh_launcher);
  REQUIRE(d.hosts);
  CHECK(d.hosts->size() == 2);
  CHECK(d.rdzv_endpoint.host == "10.1.0.5");
  CHECK(d.options.plan.master_port == 29500);
  CHECK(d.run_dir.empty());  // each agent makes its own
  for (const auto& a : probes.asked) CHECK(!contains(a, "port"));

  SECTION("--rdzv-endpoint names the store") {
    o.multi.rdzv_endpoint = "10.9.9.9:29411";
    auto e = decide_launch(o, environment(), probes).rdzv_endpoint;
    CHECK(e.host == "10.9.9.9");
    CHECK(e.port == 29411);
  }
  SECTION("no route to the first host: refused; a dry run shows this machine's name") {
    probes.routes.clear();
    CHECK(contains(refusal(o, environment(), probes), "cannot find this machine's address towards 'worker-0'"));
    o.dry_run = true;
    CHECK(decide_launch(o, environment(), probes).rdzv_endpoint.host == "node-a");
    CHECK(probes.notes.size() == 1);
  }
  SECTION("--master-port auto cannot pick a port on another host") {
    o.master_port = mtrain::config::MasterPort::automatic();
    CHECK(contains(refusal(o, environment(), probes), "--master-port auto picks a free port on this machine only"));
  }
  SECTION("--nnodes MIN:MAX around the hosts makes the ssh job elastic; a range without them is refused") {
    o.multi.nnodes = "1:2";
    CHECK(decide_launch(o, environment(), probes).mode == LaunchMode::ssh_launcher);
    o.multi.nnodes = "3:4";
    CHECK(contains(refusal(o, environment(), probes), "--nnodes 3:4 does not fit the 2 hosts the hostfile selects"));
    o.multi.nnodes = "1:2";
    o.multi.node_rank_given = true;  // a static node of the hostfile's world cannot re-form
    CHECK(contains(refusal(o, environment(), probes), "--nnodes 1:2 (MIN:MAX) needs a rendezvous that can re-form"));
  }
  SECTION("another launcher than ssh for other hosts is refused") {
    o.launcher = config::LauncherKind::Local;
    CHECK(contains(refusal(o, environment(), probes), "the hostfile selects hosts other than this machine"));
  }
  SECTION("--launcher ssh: even this machine alone goes over ssh; a missing hostfile is refused") {
    probes.hostfiles["me"] = {{"node-a", "", {0}}};
    o.launcher = config::LauncherKind::Ssh;
    o.multi.hostfile = "me";
    probes.routes["node-a"] = "127.0.0.1";
    CHECK(decide_launch(o, environment(), probes).mode == LaunchMode::ssh_launcher);
    o.multi.hostfile = "absent";
    CHECK(contains(refusal(o, environment(), probes), "--launcher ssh: the hostfile absent cannot be read"));
    o.multi.hostfile.clear();
    CHECK(contains(refusal(o, environment(), probes), "--launcher ssh needs a --hostfile"));
  }
}

TEST_CASE("decide_launch, dynamic rendezvous: a node agent joins the store", "[launch][decision][rdzv]") {
  FakeProbes probes;
  auto o = program();
  o.multi.rdzv_backend = config::RdzvBackend::C10d;  // taken as mtrain
  o.multi.rdzv_endpoint = "node-a:29400";
  o.multi.nnodes = "2:4";
  o.plan.rdzv_id = "run-5";
  auto env = environment({{"MTRAIN_RDZV_TOKEN", kToken}});
  auto d = decide_launch(o, env, probes);
  CHECK(d.mode == LaunchMode::dynamic_node);
  REQUIRE(d.agent);
  CHECK(d.agent->nnodes.min == 2);
  CHECK(d.agent->nnodes.max == 4);
  CHECK(d.agent->token == kToken);
  CHECK(!d.agent->store_elsewhere);
  const auto& p = d.options.plan;
  CHECK(p.job_id == "run-5");  // the same on every node
  CHECK(p.rdzv_backend == config::RdzvBackend::Mtrain);
  CHECK(p.rdzv_endpoint == "node-a:29400");
  CHECK(p.master_addr.empty());  // node 0's, from the agreement
  CHECK(d.run_dir == "/scratch/run-5.r4nd0mr4nd0mr4nd/node-a");  // a folder per node
  CHECK(d.plan.nodes.size() == 1);  // this node's ranks only
  for (const auto& a : probes.asked) CHECK(!contains(a, "port"));  // the agreement holds the master

  SECTION("refusals: no endpoint, no token, a node name not in the hostfile") {
    auto no_ep = o;
    no_ep.multi.rdzv_endpoint.clear();
    CHECK(contains(refusal(no_ep, env, probes), "needs --rdzv-endpoint"));
    CHECK(contains(refusal(o, environment(), probes), "needs the job token in MTRAIN_RDZV_TOKEN"));
    probes.hostfiles["hosts"] = two_hosts();
    auto named = o;
    named.multi.hostfile = "hosts";
    named.multi.node_name = "worker-9";
    CHECK(contains(refusal(named, env, probes), "--node-name 'worker-9' is not in the hostfile hosts"));
  }
  SECTION("a node named in the job's hostfile takes its slots from its line") {
    probes.hostfiles["hosts"] = two_hosts();
    o.multi.hostfile = "hosts";
    o.multi.node_name = "worker-1";
    o.plan.nproc_per_node.reset();
    auto n = decide_launch(o, env, probes);
    CHECK(n.options.plan.nproc_per_node == mtrain::config::RankCount::count(3));
    CHECK(n.run_dir == "/scratch/run-5.r4nd0mr4nd0mr4nd/worker-1");
    CHECK(n.agent->expected_hosts == std::vector<std::string>{"worker-0", "worker-1"});
  }
}

TEST_CASE("decide_launch, ssh agent: started by the launcher, which holds the store and the hostfile",
          "[launch][decision][ssh]") {
  FakeProbes probes;
  auto o = program();
  o.multi.ssh_agent = true;
  o.multi.hostfile = "hosts";  // the launcher's: never read on the agent's host
  o.multi.rdzv_endpoint = "10.1.0.5:29400";
  o.multi.node_name = "worker-1";
  o.multi.nnodes = "2";
  o.plan.node_rank = 1;
  o.multi.node_rank_given = true;
  o.plan.job_id = "job-7";
  auto d = decide_launch(o, environment({{"MTRAIN_RDZV_TOKEN", kToken}}), probes);
  CHECK(d.mode == LaunchMode::ssh_agent);
  CHECK(!d.hosts);
  CHECK(probes.asked.empty());  // no stat of the hostfile, no port check
  REQUIRE(d.agent);
  CHECK(d.agent->store_elsewhere);
  CHECK(d.agent->watch_stdin);
  CHECK(d.agent->expected_node_rank == 1);
  CHECK(d.run_dir == "/scratch/job-7.r4nd0mr4nd0mr4nd/worker-1");
}
