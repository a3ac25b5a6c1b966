// The writer SIGKILLed at random points while it writes checkpoints (50 trials): afterwards
// every checkpoint that has its COMPLETE marker verifies, `resume auto` picks one, and it loads.
// The writer is a real mtrain-worker (fork + exec) saving every step with checkpoint.keep = 1,
// so kills land in shard writes, manifest writes, the rename, the marker and the pruning.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <random>
#include <thread>

#include "helpers.hpp"
#include "lib/trainer/checkpoint/checkpointer.hpp"
#include "lib/trainer/checkpoint/verify.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;

namespace {

pid_t spawn_worker(const fs::path& job, const fs::path& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string out = log.string();
    if (!freopen(out.c_str(), "w", stdout) || !freopen(out.c_str(), "a", stderr)) _exit(126);
    ::unsetenv("RANK");
    ::unsetenv("WORLD_SIZE");
    const std::string worker = std::string(MTRAIN_BIN_DIR) + "/mtrain-worker";
    const std::string jp = job.string();
    execl(worker.c_str(), worker.c_str(), "--job", jp.c_str(), static_cast<char*>(nullptr));
    perror("exec mtrain-worker");
    _exit(127);
  }
  return pid;
}

bool any_named(const fs::path& root, const std::string& part) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (ec) break;
    if (it->path().filename().string().find(part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("SIGKILL at random points while checkpointing never leaves an unloadable newest "
          "checkpoint (50 trials)", "[checkpoint][faults]") {
  const auto base = fresh_dir("kill");
  std::mt19937 gen(20240611);
  std::uniform_int_distribution<int> delay_ms(0, 600);
  int with_checkpoint = 0, mid_save = 0;
  for (int trial = 0; trial < 50; ++trial) {
    const fs::path wd = base / ("t" + std::to_string(trial));
    fs::create_directories(wd);
    json j = small_job(wd);
    using mtrain::config::set;
    set(j, "model.n_layer", 4);
    set(j, "model.n_embd", 128);  // ~0.8 M parameters: a shard of ~10 MB with Adam state
    set(j, "train.max_steps", 100000);
    set(j, "train.log_interval", 1000);
    set(j, "checkpoint.interval", 1);
    set(j, "checkpoint.keep", 1);
    set(j, "train.threads", 1);
    std::ofstream(wd / "job.json") << j.dump();
    const pid_t pid = spawn_worker(wd / "job.json", wd / "log.txt");
    REQUIRE(pid > 0);
    // Wait (bounded) for the first complete checkpoint, then kill after a random delay.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool started = false;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!complete_checkpoints((wd / "checkpoints").string()).empty()) {
        started = true;
        break;
      }
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(gen)));
    ::kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    {
      std::ifstream lf(wd / "log.txt");
      std::string log((std::istreambuf_iterator<char>(lf)), std::istreambuf_iterator<char>());
      INFO("worker log: " << log);
      REQUIRE(started);
    }
    if (any_named(wd / "checkpoints", ".tmp_step_") || any_named(wd / "checkpoints", ".part") ||
        any_named(wd / "checkpoints", ".del_step_")) {
      ++mid_save;
    }

    const auto complete = complete_checkpoints((wd / "checkpoints").string());
    INFO("trial " << trial);
    REQUIRE_FALSE(complete.empty());  // the only valid checkpoint was never deleted
    ++with_checkpoint;
    for (const auto& [step, dir] : complete) {
      const VerifyReport rep = verify_checkpoint(dir);
      INFO(rep.problem());
      CHECK(rep.ok());
    }
    // resume auto chooses the newest complete one and it loads: every tensor reads back whole.
    std::string chosen;
    run_ranks(1, [&](Communicator& comm) {
      const auto c = choose_resume(comm, mtrain::config::Resume::automatic(), (wd / "checkpoints").string());
      if (c.dir) chosen = *c.dir;
    });
    REQUIRE(chosen == complete.back().second);
    CheckpointReader reader(chosen);
    for (const auto& [name, meta] : reader.manifest().tensors) {
      int64_t n = 1;
      for (auto s : meta.shape) n *= s;
      CHECK(reader.read(name, 0, n).numel() == n);
    }
    CHECK(reader.extra(0, "rng/cpu").has_value());
    fs::remove_all(wd);
  }
  CHECK(with_checkpoint == 50);
  // How many kills landed inside a save (leftover .tmp_/.part/.del_): reported, not asserted —
  // where a kill lands is a matter of timing.
  WARN("kills that landed mid-save: " << mid_save << " of 50");
}
