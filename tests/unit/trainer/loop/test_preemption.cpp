// Preemption: a stop signal seen at a step boundary stops every rank at the same step with a
// checkpoint, summary.json says why, and `resume auto` finishes bit-identical to an
// uninterrupted run. Heartbeat file touched while training.
#include <catch2/catch.hpp>

#include <csignal>

#include "helpers.hpp"
#include "lib/trainer/checkpoint/checkpointer.hpp"
#include "lib/trainer/loop/preemption.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;

TEST_CASE("SIGUSR1 during training: all ranks checkpoint at the same step and resume exactly",
          "[checkpoint][preemption]") {
  at::set_num_threads(1);
  const auto a = fresh_dir("preempt_a"), b = fresh_dir("preempt_b");
  auto ja = small_job(a, "mlp");
  mtrain::config::set(ja, "checkpoint.interval", 0);
  const auto ra = run_job(ja, 2);
  REQUIRE(ra.steps == 12);

  install_stop_signal_handlers();
  clear_stop_signal();
  auto jb = small_job(b, "mlp");
  mtrain::config::set(jb, "checkpoint.interval", 0);
  std::atomic<bool> raised{false};
  std::string console;
  const auto rb = run_job(jb, 2, &console, [&](TrainerParts& p) {
    p.heartbeat_file = (b / "heartbeat").string();
    // Only whichever rank gets here first raises: the other rank learns it through the vote.
    p.on_step = [&](int64_t step) {
      if (step == 7 && !raised.exchange(true)) std::raise(SIGUSR1);
    };
  });
  const int seen = pending_stop_signal();
  clear_stop_signal();
  uninstall_stop_signal_handlers();
  CHECK(seen == SIGUSR1);
  CHECK(rb.stopped_by == SIGUSR1);
  CHECK(rb.steps == 7);
  CHECK_THAT(console, Catch::Contains("preempted by SIGUSR1 at step 7: checkpoint saved to ") &&
                          Catch::Contains("step_7; rerun with --resume auto"));
  const auto kept = complete_checkpoints((b / "checkpoints").string());
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].first == 7);
  const json s = read_json(b / "summary.json");
  CHECK(s["stopped_by"] == "SIGUSR1");
  CHECK(s["steps"] == 7);
  CHECK_FALSE(fs::exists(b / "model.pt"));
  CHECK(fs::exists(b / "heartbeat"));

  mtrain::config::set(jb, "checkpoint.resume", "auto");
  std::string resumed;
  const auto rc = run_job(jb, 2, &resumed);
  CHECK(rc.stopped_by == 0);
  CHECK(rc.steps == 12);
  CHECK_THAT(resumed, Catch::Contains("Resumed from") && Catch::Contains("step_7"));
  CHECK(rc.final_loss == ra.final_loss);
  CHECK_FALSE(read_json(b / "summary.json").contains("stopped_by"));
  const auto ma = load_dict(a / "model.pt"), mb = load_dict(b / "model.pt");
  REQUIRE(ma.size() == mb.size());
  for (const auto& [k, v] : ma) {
    INFO(k);
    CHECK(at::equal(v, mb.at(k)));
  }
}

TEST_CASE("signal names and the heartbeat file", "[checkpoint][preemption]") {
  CHECK(signal_name(SIGUSR1) == "SIGUSR1");
  CHECK(signal_name(SIGTERM) == "SIGTERM");
  CHECK(signal_name(SIGINT) == "SIGINT");
  const auto d = fresh_dir("heartbeat");
  Heartbeat off;
  CHECK_FALSE(off.enabled());
  off.beat();
  Heartbeat hb((d / "hb").string());
  CHECK_FALSE(fs::exists(d / "hb"));
  hb.beat();
  REQUIRE(fs::exists(d / "hb"));
  // An old mtime is moved forward by a beat.
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(d / "hb", old);
  hb.beat();
  CHECK(fs::last_write_time(d / "hb") > old + std::chrono::minutes(30));
}
