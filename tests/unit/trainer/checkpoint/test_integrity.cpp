// Checkpoint integrity: checksums in the manifest, damaged/truncated shards named with expected
// vs actual, `resume auto` falling back past a bad newest checkpoint, keep-K pruning.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "lib/core/error.hpp"
#include "lib/trainer/checkpoint/checkpointer.hpp"
#include "lib/trainer/checkpoint/verify.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;

TEST_CASE("a corrupted or truncated shard is named with expected vs actual, and resume auto "
          "falls back to the previous valid checkpoint", "[checkpoint]") {
  at::set_num_threads(1);
  const auto d = fresh_dir("integrity");
  auto j = small_job(d);
  mtrain::config::set(j, "checkpoint.keep", 3);
  run_job(j, 2);
  const auto all = complete_checkpoints((d / "checkpoints").string());
  REQUIRE(all.size() == 3);  // steps 4, 8, 12
  for (const auto& [step, dir] : all) {
    const auto rep = verify_checkpoint(dir);
    INFO(rep.problem());
    CHECK(rep.ok());
    CHECK(rep.checksummed);
    CHECK(rep.files.size() == 2);
  }
  const Manifest m = read_manifest(all.back().second);
  REQUIRE(m.files.count("shard_rank1.pt"));
  CHECK(m.files.at("shard_rank1.pt").checksum.rfind("crc32c:", 0) == 0);
  CHECK(m.files.at("shard_rank1.pt").bytes == fs::file_size(fs::path(all.back().second) / "shard_rank1.pt"));

  // Corrupt step_12's rank-1 shard: verification names the file and both checksums.
  const fs::path s12 = fs::path(all[2].second) / "shard_rank1.pt";
  flip_byte(s12);
  auto rep = verify_checkpoint(all[2].second);
  CHECK_FALSE(rep.ok());
  CHECK_THAT(rep.problem(), Catch::Contains("shard_rank1.pt") && Catch::Contains("checksum mismatch") &&
                                Catch::Contains("expected " + read_manifest(all[2].second).files.at("shard_rank1.pt").checksum));
  // Truncate step_8's rank-0 shard: sizes named.
  const fs::path s8 = fs::path(all[1].second) / "shard_rank0.pt";
  const auto full = fs::file_size(s8);
  fs::resize_file(s8, full / 2);
  rep = verify_checkpoint(all[1].second);
  CHECK_FALSE(rep.ok());
  CHECK_THAT(rep.problem(), Catch::Contains("shard_rank0.pt") &&
                                Catch::Contains(fmt::format("expected {} bytes, found {}", full, full / 2)) &&
                                Catch::Contains("truncated"));

  // An explicit resume from the corrupted one is a clear error on every rank.
  auto jr = j;
  mtrain::config::set(jr, "train.max_steps", 14);
  mtrain::config::set(jr, "checkpoint.resume", all[2].second);
  try {
    run_job(jr, 2);
    FAIL("resuming from a corrupted checkpoint succeeded");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.message(), Catch::Contains("shard_rank1.pt") && Catch::Contains("checksum mismatch"));
  }

  // auto: skips step_12 (corrupt) and step_8 (truncated) with warnings, resumes from step_4 —
  // and at world 3, reading world 2's pieces.
  mtrain::config::set(jr, "checkpoint.resume", "auto");
  std::string console;
  const auto r = run_job(jr, 3, &console);
  CHECK_THAT(console, Catch::Contains("warning: skipping checkpoint " + all[2].second) &&
                          Catch::Contains("warning: skipping checkpoint " + all[1].second) &&
                          Catch::Contains("Resumed from " + all[0].second + " at step 4"));
  CHECK(r.steps == 14);
}

TEST_CASE("keep-K pruning keeps the newest K and never the only valid one", "[checkpoint]") {
  at::set_num_threads(1);
  const auto d = fresh_dir("keep");
  auto j = small_job(d, "mlp");
  mtrain::config::set(j, "checkpoint.keep", 1);
  mtrain::config::set(j, "checkpoint.interval", 2);
  mtrain::config::set(j, "train.max_steps", 7);
  run_job(j, 2);
  auto all = complete_checkpoints((d / "checkpoints").string());
  REQUIRE(all.size() == 1);
  CHECK(all[0].first == 7);
  CHECK(verify_checkpoint(all[0].second).ok());
  // No leftovers of the protocol (.tmp_, .del_, .part).
  for (const auto& e : fs::recursive_directory_iterator(d / "checkpoints")) {
    const std::string n = e.path().filename().string();
    INFO(n);
    CHECK(n.rfind(".tmp_", 0) != 0);
    CHECK(n.rfind(".del_", 0) != 0);
    CHECK(n.find(".part") == std::string::npos);
  }
}

TEST_CASE("rotation: keep counts verified checkpoints, a damaged one never pushes out a good one", "[checkpoint]") {
  auto steps = [](const std::vector<RotationEntry>& v) {
    std::vector<int64_t> out;
    for (const auto& e : v) out.push_back(e.step);
    return out;
  };
  // oldest first: 2 good, 3 good, 4 damaged, 5 good (just saved)
  const std::vector<RotationEntry> all{{2, "s2", true}, {3, "s3", true}, {4, "s4", false}, {5, "s5", true}};
  CHECK(steps(rotation_victims(all, 2)) == std::vector<int64_t>{2});     // keeps 5 and 3; 4 stays
  CHECK(steps(rotation_victims(all, 1)) == std::vector<int64_t>{4, 3, 2});
  CHECK(steps(rotation_victims(all, 5)).empty());
  // Newest damaged (a later flip), one good older: the good one is kept whatever keep says.
  CHECK(steps(rotation_victims({{2, "s2", true}, {4, "s4", false}, {6, "s6", true}}, 2)).empty());

  // Through real saves: step_4 damaged on disk, then a run from step_2 saves 3 and 5 with keep 2.
  at::set_num_threads(1);
  const auto d = fresh_dir("rotation");
  auto j = small_job(d, "mlp");
  mtrain::config::set(j, "checkpoint.keep", 2);
  mtrain::config::set(j, "checkpoint.interval", 2);
  mtrain::config::set(j, "train.max_steps", 4);
  run_job(j, 2);
  const auto ck = d / "checkpoints";
  fs::resize_file(ck / "step_4" / "shard_rank0.pt", fs::file_size(ck / "step_4" / "shard_rank0.pt") / 2);
  mtrain::config::set(j, "checkpoint.interval", 3);
  mtrain::config::set(j, "train.max_steps", 5);
  mtrain::config::set(j, "checkpoint.resume", (ck / "step_2").string());
  run_job(j, 2);
  std::vector<int64_t> good;
  for (const auto& [step, dir] : complete_checkpoints(ck.string()))
    if (verify_checkpoint(dir).ok()) good.push_back(step);
  CHECK(good == std::vector<int64_t>{3, 5});  // before the fix: only 5 (3 pruned, damaged 4 kept)
}

TEST_CASE("a folder without COMPLETE is never chosen, and explicit paths must verify",
          "[checkpoint]") {
  at::set_num_threads(1);
  const auto d = fresh_dir("marker");
  auto j = small_job(d, "mlp");
  mtrain::config::set(j, "train.max_steps", 4);
  run_job(j, 1);
  const fs::path ck = d / "checkpoints" / "step_4";
  REQUIRE(fs::exists(ck / "COMPLETE"));
  // A later folder that a crash left without its marker.
  fs::create_directories(d / "checkpoints" / "step_9");
  mtrain::config::set(j, "train.max_steps", 6);
  mtrain::config::set(j, "checkpoint.resume", "auto");
  std::string console;
  run_job(j, 1, &console);
  CHECK_THAT(console, Catch::Contains("skipping") && Catch::Contains("step_9") &&
                          Catch::Contains("no COMPLETE marker") && Catch::Contains("Resumed from"));
  fs::remove(ck / "COMPLETE");
  mtrain::config::set(j, "checkpoint.resume", ck.string());
  CHECK_THROWS_WITH(run_job(j, 1), Catch::Contains("COMPLETE"));
}
