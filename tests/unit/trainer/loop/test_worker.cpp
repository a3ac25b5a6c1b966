// mtrain-worker as a program: standalone, as two processes over TCPStore, and model.pt read
// back by Python's torch.load (/usr/bin/python3 with Debian's torch).
#include <catch2/catch.hpp>

#include <random>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <nlohmann/json.hpp>

#include "temp_dir.hpp"

using nlohmann::json;
using mtrain::testing::fresh_dir;
namespace fs = std::filesystem;

namespace {

const std::string kWorker = std::string(MTRAIN_BIN_DIR) + "/mtrain-worker";

// Runs a shell command (bounded by `timeout`), returns exit code and combined output.
std::pair<int, std::string> sh(const std::string& cmd, int timeout_s = 120) {
  const std::string full = "timeout " + std::to_string(timeout_s) + " bash -c '" + cmd + "' 2>&1";
  FILE* p = popen(full.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// A free port below the kernel's ephemeral range (as `mtrain launch --master-port 0` picks):
// one from bind(0) can be taken by rank 1's own connect to it before rank 0's store listens
// (TCP self-connect), and rank 0 then fails with "Address already in use".
int free_port() {
  int lo = 32768, hi = 60999;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> lo >> hi;
  REQUIRE(lo > 10100);
  std::mt19937 gen(std::random_device{}());
  for (int tries = 0; tries < 100; ++tries) {
    const int port = std::uniform_int_distribution<int>(10000, lo - 1)(gen);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    if (ok) return port;
  }
  FAIL("no free port below the ephemeral range");
  return 0;
}

const char* kSmall =
    " --set model.name=mlp --set model.hidden=24 --set model.depth=3 --set model.input_dim=6"
    " --set data.num_samples=512 --set train.batch_size=8 --set train.max_steps=6"
    " --set train.log_interval=3 --set train.threads=1";

}  // namespace

TEST_CASE("standalone mtrain-worker writes model.pt that torch.load reads with the model's names",
          "[trainer][worker]") {
  REQUIRE(fs::exists(kWorker));
  const auto d = fresh_dir("standalone");
  auto [rc, out] = sh(kWorker + kSmall + " --set train.work_dir=" + d.string());
  INFO(out);
  REQUIRE(rc == 0);
  CHECK_THAT(out, Catch::Contains("Iter(train) [3/6]  lr: "));
  REQUIRE(fs::exists(d / "model.pt"));
  REQUIRE(fs::exists(d / "summary.json"));
  const std::string py =
      "import torch, json; d = torch.load(\"" + (d / "model.pt").string() + "\"); "
      "print(json.dumps({k: [list(v.shape), str(v.dtype)] for k, v in d.items()}))";
  auto [prc, pout] = sh("/usr/bin/python3 -c '\"'\"'" + py + "'\"'\"'");
  INFO(pout);
  REQUIRE(prc == 0);
  const json names = json::parse(pout.substr(pout.find('{')));
  // mlp depth 3: Linear 6→24, 24→24, 24→10.
  CHECK(names.size() == 6);
  CHECK(names["layers.0.weight"] == json::array({json::array({24, 6}), "torch.float32"}));
  CHECK(names["layers.2.weight"] == json::array({json::array({10, 24}), "torch.float32"}));
  CHECK(names["layers.2.bias"] == json::array({json::array({10}), "torch.float32"}));
}

TEST_CASE("two mtrain-worker processes join over MASTER_ADDR/MASTER_PORT and train DDP",
          "[trainer][worker]") {
  const auto d = fresh_dir("two_ranks");
  const int port = free_port();
  std::string cmd;
  for (int r = 0; r < 2; ++r) {
    cmd += "RANK=" + std::to_string(r) + " WORLD_SIZE=2 LOCAL_RANK=" + std::to_string(r) +
           " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " + kWorker + kSmall +
           " --set comm.timeout_s=60 --set train.work_dir=" + d.string() + " > " +
           (d / ("rank" + std::to_string(r) + ".log")).string() + " 2>&1 & p" + std::to_string(r) + "=$!; ";
  }
  cmd += "wait $p0; a=$?; wait $p1; b=$?; cat " + (d / "rank0.log").string() + " " +
         (d / "rank1.log").string() + "; exit $((a + b))";
  auto [rc, out] = sh(cmd, 180);
  INFO(out);
  REQUIRE(rc == 0);
  std::ifstream in(d / "summary.json");
  const json s = json::parse(in);
  CHECK(s["world_size"] == 2);
  const double psi = s["num_params"].get<double>();
  CHECK(s["comm_per_step"]["all_reduce"]["wire_bytes"].get<double>() == Approx(2 * psi * 0.5 * 4));
  // Only rank 0 prints the training lines.
  CHECK(out.find("Iter(train) [6/6]") == out.rfind("Iter(train) [6/6]"));
}

TEST_CASE("an unknown job key is an error naming the closest valid one", "[trainer][worker]") {
  const auto d = fresh_dir("bad_key");
  {
    std::ofstream(d / "job.json") << R"({"optim": {"lrr": 0.1}})";
  }
  auto [rc, out] = sh(kWorker + " --job " + (d / "job.json").string());
  INFO(out);
  CHECK(rc == 2);
  CHECK_THAT(out, Catch::Contains("optim.lrr") && Catch::Contains("optim.lr"));
  auto [rc2, out2] = sh(kWorker + " --set train.max_stepz=3");
  CHECK(rc2 == 2);
  CHECK_THAT(out2, Catch::Contains("train.max_steps"));
  auto [rc3, out3] = sh("RANK=0 WORLD_SIZE=2 MASTER_PORT=2974025 " + kWorker);
  CHECK(rc3 == 2);
  CHECK_THAT(out3, Catch::Contains("MASTER_PORT=2974025"));
  auto [rc4, out4] = sh("RANK=3 WORLD_SIZE=2 MASTER_PORT=29999 " + kWorker);
  CHECK(rc4 == 2);
  CHECK_THAT(out4, Catch::Contains("rank 3"));
}

TEST_CASE("the worker passes LOCAL_WORLD_SIZE to HYBRID_SHARD and the ledger: two nodes of one rank",
          "[trainer][worker]") {
  const auto d = fresh_dir("hybrid");
  const int port = free_port();
  std::string cmd;
  for (int r = 0; r < 2; ++r) {
    cmd += "RANK=" + std::to_string(r) + " WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1" +
           " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " + kWorker + kSmall +
           " --set strategy=fsdp --set fsdp.sharding_strategy=HYBRID_SHARD --set comm.timeout_s=60" +
           " --set train.work_dir=" + d.string() + " > " + (d / ("rank" + std::to_string(r) + ".log")).string() +
           " 2>&1 & p" + std::to_string(r) + "=$!; ";
  }
  cmd += "wait $p0; a=$?; wait $p1; b=$?; cat " + (d / "rank0.log").string() + " " +
         (d / "rank1.log").string() + "; exit $((a + b))";
  auto [rc, out] = sh(cmd, 180);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK_THAT(out, Catch::Contains("N = 1 rank per shard group of world 2"));
  std::ifstream in(d / "summary.json");
  const json s = json::parse(in);
  CHECK(s["model_state_formula_bytes"]["ledger_world"] == 1);
  // A shard group of one rank: every rank holds all 16Ψ bytes, replicas all-reduce the
  // gradients (2Ψ·(R−1)/R elements on the wire with R = 2 replicas) and nothing is gathered.
  const double psi = s["num_params"].get<double>();
  const auto& m = s["model_state_bytes_per_rank"];
  const double measured = m["params"].get<double>() + m["grads"].get<double>() + m["optimizer"].get<double>();
  CHECK(measured == Approx(16 * psi).epsilon(0.05));
  CHECK(s["comm_per_step"]["all_reduce"]["wire_bytes"].get<double>() == Approx(2 * psi * 0.5 * 4).epsilon(0.05));
  CHECK(s["comm_per_step"].count("all_gather") == 0);
}

TEST_CASE("build-info --facts writes the build facts and the operator list, bad arguments exit 2",
          "[trainer][worker]") {
  const auto d = fresh_dir("build_info");
  const std::string facts = (d / "w.facts.json").string();
  auto [rc, out] = sh(kWorker + " build-info --facts " + facts + " --set torch_line=2.x --set source_dir=/src");
  INFO(out);
  REQUIRE(rc == 0);
  std::ifstream in(facts);
  const json f = json::parse(in);
  CHECK(f["build"] == json{{"torch_line", "2.x"}, {"source_dir", "/src"}});
  CHECK(f["libtorch"].is_string());
  CHECK_FALSE(f.contains("threads"));  // what this process sees is not a build fact
  std::ifstream ops(d / "w.operators");
  const std::string list((std::istreambuf_iterator<char>(ops)), std::istreambuf_iterator<char>());
  CHECK_THAT(list, Catch::Contains("aten::linear\n"));
  CHECK_FALSE(fs::exists(facts + ".tmp"));

  auto [rc1, out1] = sh(kWorker + " build-info");  // what this process sees, on stdout
  INFO(out1);
  REQUIRE(rc1 == 0);
  CHECK(json::parse(out1.substr(out1.find('{'))).contains("threads"));
  auto [rc2, out2] = sh(kWorker + " build-info --facts " + facts + " --bogus");
  CHECK(rc2 == 2);
  CHECK_THAT(out2, Catch::Contains("mtrain-worker build-info: ") && Catch::Contains("unexpected argument '--bogus'") &&
                       Catch::Contains("usage: mtrain-worker"));
  auto [rc3, out3] = sh(kWorker + " build-info --set torch_line");
  CHECK(rc3 == 2);
  CHECK_THAT(out3, Catch::Contains("--set needs key=value, got 'torch_line'"));
  auto [rc4, out4] = sh(kWorker + " build-info --set a=b");
  CHECK(rc4 == 2);
  CHECK_THAT(out4, Catch::Contains("build-info options need --facts FILE"));
}

TEST_CASE("a run that fails before writing anything removes the work dir it created, and only that",
          "[trainer][worker]") {
  const auto d = fresh_dir("fails_early");
  // model.init is opened after rank 0 took the work dir's lock, so the dir exists by then.
  const std::string bad_init = std::string(kSmall) + " --set model.init=" + (d / "missing.safetensors").string();
  auto [rc, out] = sh(kWorker + bad_init + " --set train.work_dir=" + (d / "new").string());
  INFO(out);
  CHECK(rc == 2);
  CHECK_THAT(out, Catch::Contains("mtrain-worker: ddp on world 1") && Catch::Contains("does not exist"));
  CHECK_FALSE(fs::exists(d / "new"));
  fs::create_directories(d / "old");
  auto [rc2, out2] = sh(kWorker + bad_init + " --set train.work_dir=" + (d / "old").string());
  CHECK(rc2 == 2);
  CHECK(fs::exists(d / "old"));  // not this run's to remove
}
