#include <catch2/catch.hpp>

#include "lib/launch/progress_watch.hpp"

using namespace mtrain::launch;
using mtrain::rendezvous::Duration;
using mtrain::rendezvous::ManualClock;

TEST_CASE("progress watch: output or a touched heartbeat file keeps a rank alive", "[launch][progress]") {
  ManualClock clock;
  ProgressWatch w(Duration(60000), clock);
  w.add(0, 100, "worker-0");
  w.add(3, 103, "worker-1");
  w.heartbeat(3, 1000);  // the file as created at spawn: not progress by itself
  clock.advance(Duration(59000));
  CHECK_FALSE(w.check());
  w.output(0);
  w.heartbeat(3, 2000);  // touched
  clock.advance(Duration(59000));
  CHECK_FALSE(w.check());
  w.heartbeat(3, 2000);  // the same stamp again is not progress
  w.output(0);
  clock.advance(Duration(1000));
  auto s = w.check();
  REQUIRE(s);
  CHECK(s->rank == 3);
  CHECK(s->pid == 103);
  CHECK(s->silent == Duration(60000));
  CHECK(s->describe().find("rank 3 (pid 103) on worker-1 made no progress for 60") != std::string::npos);
}

TEST_CASE("progress watch: finished ranks are not watched, the longest-silent rank is named", "[launch][progress]") {
  ManualClock clock;
  ProgressWatch w(Duration(1000), clock);
  w.add(0, 10, "a");
  clock.advance(Duration(300));
  w.add(1, 11, "a");
  clock.advance(Duration(800));
  auto s = w.check();
  REQUIRE(s);
  CHECK(s->rank == 0);
  w.finished(0);
  CHECK_FALSE(w.check());
  clock.advance(Duration(300));
  REQUIRE(w.check());
  CHECK(w.check()->rank == 1);
  w.heartbeat(1, -1);  // no file: nothing observed
  CHECK(w.check());
}

TEST_CASE("progress watch, adaptive (the default): armed by beats, limit scales with the gaps", "[launch][progress]") {
  ManualClock clock;
  ProgressWatch w(Duration(20000), clock, AdaptiveWatch{true, 20});
  w.add(0, 10, "a");  // beats
  w.add(1, 11, "a");  // never beats: never watched
  w.heartbeat(0, 1);  // created at spawn
  clock.advance(Duration(600000));  // a long start-up: not watched yet
  CHECK_FALSE(w.check());
  w.heartbeat(0, 2);  // beat 1
  clock.advance(Duration(90000));   // resume + first step: not measured
  w.heartbeat(0, 3);  // beat 2
  CHECK_FALSE(w.check());
  clock.advance(Duration(1500));
  w.heartbeat(0, 4);  // beat 3: armed, longest gap 1.5 s → limit max(20 s, 30 s) = 30 s
  clock.advance(Duration(29000));
  CHECK_FALSE(w.check());
  clock.advance(Duration(1000));
  auto s = w.check();
  REQUIRE(s);
  CHECK(s->rank == 0);
  CHECK(s->silent == Duration(30000));
  // Short gaps: the floor (20 s) holds.
  ProgressWatch fast(Duration(20000), clock, AdaptiveWatch{true, 20});
  fast.add(2, 12, "b");
  for (int i = 1; i <= 5; ++i) {
    fast.heartbeat(2, i);
    clock.advance(Duration(100));
  }
  clock.advance(Duration(19800));
  CHECK_FALSE(fast.check());
  clock.advance(Duration(200));
  CHECK(fast.check());
}
