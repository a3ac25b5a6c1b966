// A restarted attempt of an elastic job: 'auto' resume, the global batch kept by recomputing the
// accumulation, the refusal naming valid world sizes, the step record and the report line.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "lib/core/error.hpp"
#include "lib/trainer/loop/elastic_resume.hpp"

using namespace mtrain::trainer;
using Catch::Contains;
namespace fs = std::filesystem;

TEST_CASE("restart info comes from the launcher's variables", "[trainer][elastic]") {
  RestartInfo none = restart_info_from_env({});
  CHECK_FALSE(none.restarted());
  CHECK_FALSE(none.elastic());
  RestartInfo r = restart_info_from_env({{"TORCHELASTIC_RESTART_COUNT", "2"},
                                         {"TORCHELASTIC_MAX_RESTARTS", "3"},
                                         {"MTRAIN_RDZV_ROUND", "4"},
                                         {"MTRAIN_RESTART_REASON", "node 'n2' (node rank 2) stopped sending heartbeats"},
                                         {"MTRAIN_LOST_NODES", "n2,n5"}});
  CHECK(r.restart_count == 2);
  CHECK(r.max_restarts == 3);
  CHECK(r.round == 4);
  CHECK(r.lost_nodes == "n2,n5");
  CHECK(r.restarted());
  CHECK(r.elastic());
  // A membership change (scale up) keeps the count but is a new round: restarted all the same.
  CHECK(restart_info_from_env({{"MTRAIN_RDZV_ROUND", "1"}}).restarted());
  // The first round of a dynamic job is no restart, but it records its steps for the next one.
  CHECK_FALSE(restart_info_from_env({{"MTRAIN_RDZV_ROUND", "0"}}).restarted());
  CHECK(restart_info_from_env({{"MTRAIN_RDZV_ROUND", "0"}}).elastic());
  // Malformed values count as absent.
  CHECK(restart_info_from_env({{"TORCHELASTIC_RESTART_COUNT", "x"}}).restart_count == 0);
  CHECK(restart_info_from_env({{"TORCHELASTIC_RESTART_COUNT", "-1"}}).restart_count == 0);
}

TEST_CASE("a restarted attempt resumes by itself, a first attempt does not", "[trainer][elastic]") {
  TrainJob first;
  CHECK(apply_restart(first, 4, RestartInfo{}).empty());
  CHECK_FALSE(first.resume.given());

  TrainJob again;
  RestartInfo info;
  info.restart_count = 1;
  auto notes = apply_restart(again, 4, info);
  CHECK(again.resume == mtrain::config::Resume::automatic());
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Contains("resuming from the newest complete checkpoint"));

  // A resume the user asked for is kept.
  TrainJob chosen;
  chosen.resume = mtrain::config::Resume::at("/ckpt/step_10");
  apply_restart(chosen, 4, info);
  CHECK(chosen.resume == mtrain::config::Resume::at("/ckpt/step_10"));
}

TEST_CASE("the global batch is kept at the new world size, or the world size is refused", "[trainer][elastic]") {
  TrainJob j;
  j.batch_size = 2;
  j.grad_accum = 3;
  j.global_batch_size = 24;
  CHECK(apply_restart(j, 4, RestartInfo{}).empty());  // already 2 x 3 x 4
  CHECK(j.grad_accum == 3);
  auto notes = apply_restart(j, 2, RestartInfo{});
  CHECK(j.grad_accum == 6);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Contains("train.global_batch_size 24 at world size 2: grad_accum 6 (was 3)"));
  apply_restart(j, 3, RestartInfo{});
  CHECK(j.grad_accum == 4);
  try {
    apply_restart(j, 5, RestartInfo{});
    FAIL("world 5 cannot keep 24 samples of 2");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.message(), Contains("world size 5") && Contains("1, 2, 3, 4, 6 and 12"));
  }
  // Without a global batch the accumulation is the job's own at any world size.
  TrainJob free;
  free.grad_accum = 2;
  apply_restart(free, 7, RestartInfo{});
  CHECK(free.grad_accum == 2);
}

TEST_CASE("the reached step is recorded and read back, the report counts the steps redone", "[trainer][elastic]") {
  const fs::path dir = fs::temp_directory_path() / ("mtrain_test_elastic_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  CHECK_FALSE(read_reached_step(dir.string()));
  record_reached_step(dir.string(), 7);
  record_reached_step(dir.string(), 13);
  CHECK(read_reached_step(dir.string()) == 13);
  std::ofstream(reached_step_path(dir.string())) << "garbage";
  CHECK_FALSE(read_reached_step(dir.string()));
  fs::remove_all(dir);

  RestartInfo info;
  info.restart_count = 1;
  info.round = 1;
  info.reason = "node 'n2' (node rank 2) stopped sending heartbeats (none for more than 3.0 s)";
  const std::string line = restart_report(info, 10, 13, 2);
  CHECK_THAT(line, Contains("The job re-formed (rendezvous round 1, restart count 1): node 'n2' (node rank 2)"));
  CHECK_THAT(line, Contains("resumed at step 10 on world size 2"));
  CHECK_THAT(line, !Contains("nodes lost"));
  info.lost_nodes = "n2";
  CHECK_THAT(restart_report(info, 10, 13, 2), Contains("(none for more than 3.0 s); nodes lost: n2; resumed at step 10"));
  CHECK_THAT(line, Contains("the previous attempt reached step 13: 3 steps redone"));
  CHECK_THAT(restart_report(info, 10, 11, 2), Contains("1 step redone"));
  CHECK_THAT(restart_report(info, 10, 10, 2), Contains("0 steps redone"));
  CHECK_THAT(restart_report(info, 10, std::nullopt, 2), Contains("not known"));
}
