#include <catch2/catch.hpp>

#include "mtrain/launch/progress_watch.hpp"

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

TEST_CASE("progress watch: finished ranks are not watched; the longest-silent rank is named", "[launch][progress]") {
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
