// The store protocol, message by message, with a clock that only moves when the test says so.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/rendezvous/store.hpp"

using namespace mtrain::rendezvous;
using nlohmann::json;
using Catch::Contains;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {
const std::string kToken = "0123456789abcdef0123456789abcdef";

struct Fixture {
  ManualClock clock;
  std::unique_ptr<Store> store;

  explicit Fixture(StoreOptions o) {
    o.token = kToken;
    o.run_id = "job-1";
    store = std::make_unique<Store>(std::move(o), clock);
  }
  Reply send(const std::string& node, json msg) {
    msg["token"] = kToken;
    msg["node"] = node;
    return store->handle(msg);
  }
  json join(const std::string& node, const std::string& host, int slots) {
    Reply r = send(node, {{"op", "join"}, {"host", host}, {"slots", slots}});
    INFO(r.body.dump());
    REQUIRE(r.body["ok"] == true);
    REQUIRE_FALSE(r.close);
    return r.body;
  }
  json beat(const std::string& node) { return send(node, {{"op", "heartbeat"}}).body; }
};

StoreOptions nodes(int min, int max) {
  StoreOptions o;
  o.min_nodes = min;
  o.max_nodes = max;
  o.join_timeout = seconds(60);
  o.last_call = seconds(5);
  o.heartbeat_timeout = seconds(10);
  return o;
}
}  // namespace

TEST_CASE("store: three uneven nodes join and agree on contiguous ranks", "[rendezvous][store]") {
  Fixture f(nodes(3, 3));
  CHECK(f.join("a", "worker-0", 4)["phase"] == "joining");
  auto r = f.join("b", "worker-1", 2);
  CHECK(r["phase"] == "joining");
  CHECK(r["progress"] == "2/3 nodes joined (worker-0, worker-1)");
  r = f.join("c", "worker-2", 3);
  REQUIRE(r["phase"] == "running");  // MAX reached: no last call
  CHECK(r["node_rank"] == 2);
  NodeAssignment a = node_assignment_from_json(r["assignment"]);
  CHECK(a.nnodes == 3);
  CHECK(a.world_size == 9);
  CHECK(a.master_addr == "worker-0");
  CHECK(a.master_port == 29500);
  CHECK(a.run_id == "job-1");
  CHECK(a.self.host == "worker-2");
  CHECK(a.self.first_rank == 6);
  CHECK(a.self.local_world_size == 3);
  // The others learn their node ranks (and only their own share) on their next heartbeat.
  CHECK(f.beat("a")["node_rank"] == 0);
  auto b = f.beat("b");
  CHECK(b["node_rank"] == 1);
  CHECK(node_assignment_from_json(b["assignment"]).self.host == "worker-1");
  CHECK(node_assignment_from_json(b["assignment"]).self.first_rank == 4);
  REQUIRE(f.store->status().assignment);
  CHECK(f.store->status().assignment->nodes[1].first_rank == 4);
  CHECK(f.store->status().progress == "job formed: 3 nodes, 9 ranks, master worker-0:29500");
}

TEST_CASE("store: MIN:MAX waits for the last call after MIN nodes", "[rendezvous][store]") {
  Fixture f(nodes(2, 4));
  f.join("a", "n0", 1);
  f.clock.advance(seconds(3));
  auto r = f.join("b", "n1", 1);  // MIN reached: the 5 s last call opens now
  CHECK(r["phase"] == "joining");
  CHECK_THAT(r["progress"].get<std::string>(), Contains("last call: starting with 2 nodes unless more join within 5.0 s"));
  f.clock.advance(seconds(4));
  f.store->tick();
  CHECK(f.store->status().phase == Phase::joining);
  f.join("c", "n2", 2);  // joins inside the window: included, window not extended
  f.clock.advance(milliseconds(999));
  f.store->tick();
  CHECK(f.store->status().phase == Phase::joining);
  f.beat("a");
  f.beat("b");
  f.clock.advance(milliseconds(1));
  f.store->tick();
  auto s = f.store->status();
  REQUIRE(s.phase == Phase::running);
  REQUIRE(s.assignment);
  CHECK(s.assignment->nodes.size() == 3);
  CHECK(s.assignment->world_size == 4);
  CHECK(s.assignment->nodes[2].first_rank == 2);
  // A fourth node after the agreement is not part of the job.
  Reply late = f.send("d", {{"op", "join"}, {"host", "n3"}, {"slots", 1}});
  CHECK(late.body["ok"] == false);
  CHECK_THAT(late.body["error"].get<std::string>(), Contains("already formed with 3 nodes"));
}

TEST_CASE("store: MAX nodes end the last call early", "[rendezvous][store]") {
  Fixture f(nodes(1, 2));
  CHECK(f.join("a", "n0", 1)["phase"] == "joining");
  CHECK(f.join("b", "n1", 1)["phase"] == "running");
}

TEST_CASE("store: expected hosts set node order and name who is missing", "[rendezvous][store]") {
  auto o = nodes(3, 3);
  o.expected_hosts = {"worker-0", "worker-1", "worker-2"};
  Fixture f(o);
  CHECK(f.store->status().progress == "0/3 nodes joined; waiting for: worker-0, worker-1, worker-2");
  f.join("x", "worker-2", 1);
  auto r = f.join("y", "worker-0", 2);
  CHECK(r["progress"] == "2/3 nodes joined; waiting for: worker-1");
  Reply stranger = f.send("z", {{"op", "join"}, {"host", "intruder"}, {"slots", 1}});
  CHECK(stranger.body["ok"] == false);
  CHECK_THAT(stranger.body["error"].get<std::string>(), Contains("not in this job's host list"));
  Reply twice = f.send("w", {{"op", "join"}, {"host", "worker-0"}, {"slots", 1}});
  CHECK_THAT(twice.body["error"].get<std::string>(), Contains("already joined"));
  r = f.join("v", "worker-1", 1);
  REQUIRE(r["phase"] == "running");
  Assignment a = *f.store->status().assignment;
  CHECK(a.nodes[0].host == "worker-0");  // host-list order, not join order
  CHECK(a.nodes[2].host == "worker-2");
  CHECK(a.nodes[2].first_rank == 3);
  CHECK(r["node_rank"] == 1);
  CHECK(node_assignment_from_json(r["assignment"]).self.first_rank == 2);
}

TEST_CASE("store: a node that never joins times the rendezvous out, named", "[rendezvous][store]") {
  auto o = nodes(3, 3);
  o.expected_hosts = {"worker-0", "worker-1", "worker-2"};
  Fixture f(o);
  f.join("a", "worker-0", 1);
  f.join("b", "worker-1", 1);
  for (int i = 0; i < 5; ++i) {  // keep the joined ones alive until the deadline
    f.clock.advance(seconds(9));
    f.beat("a");
    f.beat("b");
  }
  CHECK(f.store->status().phase == Phase::joining);
  f.clock.advance(seconds(9));
  f.beat("a");
  f.beat("b");
  f.clock.advance(seconds(6));
  f.store->tick();
  auto s = f.store->status();
  REQUIRE(s.phase == Phase::failed);
  CHECK_THAT(s.reason, Contains("timed out after 60.0 s") && Contains("2/3 nodes joined") &&
                           Contains("never joined: worker-2"));
  CHECK(s.failed_nodes == std::vector<std::string>{"worker-2"});
  auto r = f.beat("a");
  CHECK(r["phase"] == "failed");
  CHECK_THAT(r["reason"].get<std::string>(), Contains("worker-2"));
}

TEST_CASE("store: without a host list the timeout says how many were needed", "[rendezvous][store]") {
  Fixture f(nodes(2, 2));
  f.join("a", "n0", 1);
  f.clock.advance(seconds(9));
  f.beat("a");
  f.clock.advance(seconds(9));
  f.beat("a");
  for (int i = 0; i < 5; ++i) {
    f.clock.advance(seconds(9));
    f.beat("a");
  }
  f.store->tick();
  CHECK_THAT(f.store->status().reason, Contains("1 of the at least 2 nodes joined"));
}

TEST_CASE("store: a joined node that goes silent before the start is dropped", "[rendezvous][store]") {
  Fixture f(nodes(2, 3));
  f.join("a", "n0", 1);
  f.join("b", "n1", 1);  // last call opens
  f.clock.advance(seconds(4));
  f.beat("a");
  f.clock.advance(seconds(7));  // b silent for 11 s > 10 s
  f.store->tick();
  auto s = f.store->status();
  CHECK(s.phase == Phase::joining);  // below MIN again: the last call closed
  CHECK(s.joined == std::vector<std::string>{"n0"});
  CHECK(f.beat("b")["ok"] == false);  // must join again
  f.beat("a");
  f.join("b", "n1", 1);
  f.clock.advance(seconds(5));
  f.beat("a");
  f.beat("b");
  f.store->tick();
  CHECK(f.store->status().phase == Phase::running);
}

TEST_CASE("store: a node that stops heart-beating after the start fails the job, named", "[rendezvous][store]") {
  Fixture f(nodes(3, 3));
  f.join("a", "n0", 2);
  f.join("b", "n1", 2);
  f.join("c", "n2", 2);
  for (int i = 0; i < 3; ++i) {
    f.clock.advance(seconds(6));
    f.beat("a");
    f.beat("c");  // b has stopped
  }
  auto s = f.store->status();
  REQUIRE(s.phase == Phase::failed);
  CHECK(s.failed_nodes == std::vector<std::string>{"n1"});
  CHECK_THAT(s.reason, Contains("node 'n1' (node rank 1) stopped sending heartbeats"));
  auto r = f.beat("c");
  CHECK(r["phase"] == "failed");
  CHECK_THAT(r["reason"].get<std::string>(), Contains("'n1'"));
}

TEST_CASE("store: fail, leave and abort", "[rendezvous][store]") {
  Fixture f(nodes(2, 2));
  f.join("a", "n0", 1);
  f.join("b", "n1", 1);
  SECTION("a node reports its ranks failed") {
    auto r = f.send("b", {{"op", "fail"}, {"reason", "rank 1 exited with code 3"}}).body;
    CHECK(r["phase"] == "failed");
    CHECK_THAT(f.beat("a")["reason"].get<std::string>(),
               Contains("node 'n1' (node rank 1) reported a failure: rank 1 exited with code 3"));
    CHECK(f.store->status().failed_nodes == std::vector<std::string>{"n1"});
  }
  SECTION("all nodes leave: finished; a left node is not missed") {
    f.send("a", {{"op", "leave"}});
    f.clock.advance(seconds(30));
    f.beat("b");
    f.store->tick();
    CHECK(f.store->status().phase == Phase::running);
    CHECK(f.send("b", {{"op", "leave"}}).body["phase"] == "finished");
  }
  SECTION("the launcher aborts") {
    f.store->abort("interrupted (SIGINT)");
    CHECK(f.beat("a")["reason"] == "interrupted (SIGINT)");
  }
}

TEST_CASE("store: wrong token and malformed requests are refused with close", "[rendezvous][store]") {
  Fixture f(nodes(1, 2));
  Reply r = f.store->handle({{"op", "join"}, {"node", "a"}, {"host", "h"}, {"slots", 1}});
  CHECK(r.close);
  CHECK_THAT(r.body["error"].get<std::string>(), Contains("token"));
  r = f.store->handle({{"token", kToken + "x"}, {"op", "join"}, {"node", "a"}, {"host", "h"}, {"slots", 1}});
  CHECK(r.close);
  r = f.store->handle({{"token", 12}, {"op", "heartbeat"}, {"node", "a"}});
  CHECK(r.close);
  CHECK(f.store->status().joined.empty());

  CHECK(f.send("a", {{"op", "dance"}}).close);
  CHECK(f.send("a", {{"op", 3}}).close);
  CHECK(f.send("", {{"op", "heartbeat"}}).close);
  CHECK(f.send("a", {{"op", "join"}, {"host", "h"}, {"slots", 0}}).close);
  CHECK(f.send("a", {{"op", "join"}, {"host", "h"}, {"slots", "2"}}).close);
  CHECK(f.send("a", {{"op", "join"}, {"host", "bad host"}, {"slots", 1}}).close);
  CHECK(f.send("a", {{"op", "join"}, {"host", std::string(300, 'h')}, {"slots", 1}}).close);
  CHECK(f.send("a", {{"op", "join"}, {"slots", 1}}).close);
  CHECK(f.store->status().joined.empty());
  // A heartbeat from a node that never joined is declined, not fatal.
  Reply unknown = f.send("ghost", {{"op", "heartbeat"}});
  CHECK_FALSE(unknown.close);
  CHECK(unknown.body["ok"] == false);
}

TEST_CASE("store: a join retried with the same node id is idempotent", "[rendezvous][store]") {
  Fixture f(nodes(2, 2));
  f.join("a", "n0", 1);
  f.join("a", "n0", 1);
  CHECK(f.store->status().joined.size() == 1);
}

TEST_CASE("store: replies and progress stay small with thousands of nodes", "[rendezvous][store]") {
  auto o = nodes(4096, 4096);
  for (int i = 0; i < 4096; ++i) o.expected_hosts.push_back(fmt::format("node-{:04}", i));
  Fixture f(o);
  for (int i = 0; i < 4095; ++i) f.join(fmt::format("id-{}", i), fmt::format("node-{:04}", i), 8);
  auto r = f.beat("id-0");
  CHECK(r["progress"] == "4095/4096 nodes joined; waiting for: node-4095");
  r = f.join("id-4095", "node-4095", 8);
  REQUIRE(r["phase"] == "running");
  CHECK(r.dump().size() < 1000);  // the whole table would be ~300 KB
  CHECK(node_assignment_from_json(r["assignment"]).self.first_rank == 4095 * 8);
  CHECK(node_assignment_from_json(f.beat("id-17")["assignment"]).self.first_rank == 17 * 8);
  // A running node's brief keep-alive: phase and round only.
  auto brief = f.send("id-17", {{"op", "heartbeat"}, {"brief", true}}).body;
  CHECK(brief == json{{"ok", true}, {"phase", "running"}, {"round", 0}, {"restarts", 0}});

  Fixture g(nodes(3, 4096));
  g.join("a", "h-a", 1);
  for (int i = 0; i < 20; ++i) g.join(fmt::format("id-{}", i), fmt::format("h-{}", i), 1);
  CHECK_THAT(g.store->progress(), Contains("21 nodes joined (need 3 to 4096): h-a, h-0, h-1") &&
                                      Contains("h-6 and 13 more; last call"));
}

namespace {
StoreOptions elastic(int min, int max, int restarts) {
  StoreOptions o = nodes(min, max);
  o.max_restarts = restarts;
  return o;
}
NodeAssignment share(const json& reply) { return node_assignment_from_json(reply.at("assignment")); }
}  // namespace

TEST_CASE("store: restarts — a rank failure re-forms the job with every node, counted once for the job",
          "[rendezvous][store][restart]") {
  Fixture f(elastic(2, 3, 2));
  f.join("a", "n0", 2);
  f.join("b", "n1", 1);
  REQUIRE(f.join("c", "n2", 1)["phase"] == "running");
  auto r = f.send("b", {{"op", "fail"}, {"reason", "rank 2 exited with code 1"}}).body;
  CHECK(r["phase"] == "joining");
  CHECK(r["round"] == 1);
  CHECK(r["restarts"] == 1);
  // The others learn it on their next heartbeat: a newer round.
  auto beat = f.beat("a");
  CHECK(beat["phase"] == "joining");
  CHECK(beat["round"] == 1);
  CHECK_THAT(beat["restart_reason"].get<std::string>(), Contains("node 'n1' (node rank 1) reported a failure"));
  // A late failure report from a node whose ranks died because the others stopped: no news.
  f.send("c", {{"op", "fail"}, {"reason", "gloo: connection reset"}});
  CHECK(f.store->status().restarts == 1);
  CHECK(f.store->status().phase == Phase::joining);
  CHECK_THAT(f.store->progress(), Contains("restart 1 of 2") && Contains("waiting for: n0, n1, n2"));
  f.join("c", "n2", 1);
  f.join("a", "n0", 2);
  CHECK(f.store->status().phase == Phase::joining);  // n1 is alive and not back yet
  r = f.join("b", "n1", 1);
  REQUIRE(r["phase"] == "running");  // everyone back: no last call
  CHECK(r["restarts"] == 1);
  CHECK(r["round"] == 1);
  // Survivors keep their order; ranks contiguous.
  CHECK(share(f.beat("a")).self.first_rank == 0);
  CHECK(share(r).self.node_rank == 1);
  CHECK(share(r).self.first_rank == 2);
  CHECK(share(f.beat("c")).self.first_rank == 3);
  CHECK(f.beat("c")["restarts"] == 1);
}

TEST_CASE("store: restarts — a lost node re-forms the job with the survivors, renumbered",
          "[rendezvous][store][restart]") {
  Fixture f(elastic(2, 3, 3));
  f.join("a", "n0", 1);
  f.join("b", "n1", 2);
  f.join("c", "n2", 4);
  for (int i = 0; i < 2; ++i) {
    f.clock.advance(seconds(6));
    f.beat("a");
    f.beat("c");  // n1 has died
  }
  auto s = f.store->status();
  REQUIRE(s.phase == Phase::joining);
  CHECK(s.restarts == 1);
  CHECK(s.lost == std::vector<std::string>{"n1"});
  CHECK_THAT(s.restart_reason, Contains("node 'n1' (node rank 1) stopped sending heartbeats"));
  f.join("c", "n2", 4);
  auto r = f.join("a", "n0", 1);
  REQUIRE(r["phase"] == "running");
  CHECK(share(r).nnodes == 2);
  CHECK(share(r).world_size == 5);
  CHECK(r["lost"] == json::array({"n1"}));  // a restarted program names the node it lost
  CHECK(share(f.beat("c")).self.node_rank == 1);
  CHECK(share(f.beat("c")).self.first_rank == 1);
  CHECK(f.beat("b")["ok"] == false);  // the lost node is no longer known
}

TEST_CASE("store: restarts — a node arriving while the job runs waits and costs no restart",
          "[rendezvous][store][restart]") {
  Fixture f(elastic(2, 3, 1));
  f.join("a", "n0", 1);
  f.join("b", "n1", 1);
  f.clock.advance(seconds(5));  // last call over
  f.beat("a");
  REQUIRE(f.store->status().phase == Phase::running);
  auto w = f.join("w", "n9", 1);
  CHECK(w["phase"] == "joining");  // waits
  CHECK_FALSE(w.contains("assignment"));
  CHECK(f.store->status().restarts == 0);
  CHECK(f.beat("a")["phase"] == "running");  // the running nodes are not disturbed
  CHECK_THAT(f.store->progress(), Contains("1 node waiting for the next round"));
  // The next failure's round takes it in.
  f.send("a", {{"op", "fail"}, {"reason", "boom"}});
  f.join("a", "n0", 1);
  auto r = f.join("b", "n1", 1);
  REQUIRE(r["phase"] == "running");
  CHECK(share(r).nnodes == 3);
  CHECK(share(f.beat("w")).self.node_rank == 2);
  // The budget is spent: the next failure fails the job.
  f.send("w", {{"op", "fail"}, {"reason", "again"}});
  CHECK(f.store->status().phase == Phase::failed);
  CHECK_THAT(f.store->status().reason, Contains("no restarts left: all 1 used"));
}

namespace {
// A 2:3 job with scale up, running with n0 (1 slot) and n1 (`slots_b`) after the last call.
void start_two_of_three(Fixture& f, int slots_b) {
  f.join("a", "n0", 1);
  f.join("b", "n1", slots_b);
  f.clock.advance(seconds(5));  // last call over
  f.beat("a");
  REQUIRE(f.store->status().phase == Phase::running);
}
StoreOptions scaling(int min, int max) {
  StoreOptions o = elastic(min, max, 1);
  o.scale_up = true;
  return o;
}
}  // namespace

TEST_CASE("store: scale up — a node arriving while the job runs opens a round at once, not counted",
          "[rendezvous][store][restart][scale_up]") {
  Fixture f(scaling(2, 3));
  start_two_of_three(f, 2);
  CHECK_FALSE(f.beat("a").contains("membership_change"));
  auto w = f.join("w", "n9", 1);
  CHECK(w["phase"] == "joining");
  CHECK(w["round"] == 1);
  auto s = f.store->status();
  CHECK(s.phase == Phase::joining);
  CHECK(s.round == 1);
  CHECK(s.restarts == 0);  // a membership change is not a failure
  CHECK(s.membership_change);
  CHECK_THAT(s.restart_reason, Contains("node 'n9' is waiting to join: the job scales up from 2 nodes"));
  // The running nodes learn it on their next heartbeat, marked as a membership change.
  auto beat = f.beat("a");
  CHECK(beat["round"] == 1);
  CHECK(beat["membership_change"] == true);
  CHECK_THAT(f.store->progress(), Contains("round 1 (node 'n9' is waiting"));
  // Every survivor back: the round forms with the newcomer last.
  f.join("a", "n0", 1);
  auto r = f.join("b", "n1", 2);
  REQUIRE(r["phase"] == "running");
  CHECK(r["restarts"] == 0);
  CHECK(share(r).nnodes == 3);
  CHECK(share(r).world_size == 4);
  CHECK(share(f.beat("w")).self.node_rank == 2);
  CHECK(share(f.beat("w")).self.first_rank == 3);
  // The whole budget is still there: a failure now re-forms (restart 1), and is no membership change.
  f.send("w", {{"op", "fail"}, {"reason", "boom"}});
  s = f.store->status();
  CHECK(s.phase == Phase::joining);
  CHECK(s.restarts == 1);
  CHECK_FALSE(s.membership_change);
  CHECK_FALSE(f.beat("a").contains("membership_change"));
}

TEST_CASE("store: scale up — a full job or one whose nodes finished does not re-form for an arrival",
          "[rendezvous][store][restart][scale_up]") {
  Fixture f(scaling(1, 2));
  f.join("a", "n0", 1);
  REQUIRE(f.join("b", "n1", 1)["phase"] == "running");  // MAX: formed at once
  auto full = f.send("w", {{"op", "join"}, {"host", "n9"}, {"slots", 1}}).body;
  CHECK(full["ok"] == false);  // no room below MAX
  CHECK(f.store->status().round == 0);
  // A job with room but a node already finished: the newcomer waits; nothing is redone.
  Fixture g(scaling(2, 3));
  start_two_of_three(g, 1);
  g.send("a", {{"op", "leave"}});
  CHECK(g.join("w", "n9", 1)["phase"] == "joining");
  CHECK(g.store->status().round == 0);
  CHECK(g.store->status().phase == Phase::running);
}

TEST_CASE("store: restarts — fewer than MIN nodes back within the timeout fails, naming the lost",
          "[rendezvous][store][restart]") {
  auto o = elastic(2, 2, 1);
  o.join_timeout = seconds(20);
  Fixture f(o);
  f.join("a", "n0", 1);
  f.join("b", "n1", 1);
  for (int i = 0; i < 2; ++i) {
    f.clock.advance(seconds(6));
    f.beat("a");
  }
  REQUIRE(f.store->status().phase == Phase::joining);
  f.join("a", "n0", 1);
  for (int i = 0; i < 4; ++i) {
    f.clock.advance(seconds(6));
    f.beat("a");
  }
  auto s = f.store->status();
  REQUIRE(s.phase == Phase::failed);
  CHECK_THAT(s.reason, Contains("could not re-form after restart 1 of 1") && Contains("1 of the at least 2 nodes") &&
                           Contains("nodes lost: n1"));
  CHECK(s.failed_nodes == std::vector<std::string>{"n1"});
}

TEST_CASE("store: without restarts a failure still ends the job and late nodes are refused",
          "[rendezvous][store][restart]") {
  Fixture f(nodes(2, 2));
  f.join("a", "n0", 1);
  f.join("b", "n1", 1);
  CHECK(f.send("x", {{"op", "join"}, {"host", "n2"}, {"slots", 1}}).body["ok"] == false);
  f.send("a", {{"op", "fail"}, {"reason", "boom"}});
  CHECK(f.store->status().phase == Phase::failed);
  CHECK(f.store->status().restarts == 0);
}

TEST_CASE("store: invalid options are errors", "[rendezvous][store]") {
  ManualClock c;
  StoreOptions o = nodes(3, 2);
  o.token = kToken;
  CHECK_THROWS_AS(Store(o, c), mtrain::Error);
  o = nodes(3, 3);
  CHECK_THROWS_WITH(Store(o, c), Contains("token"));
  o.token = kToken;
  o.expected_hosts = {"a", "b"};
  CHECK_THROWS_WITH(Store(o, c), Contains("at least 3 nodes but only 2 hosts"));
}

TEST_CASE("store: restarts — a node already silent when a failure opens the round is not given a fresh timeout",
          "[rendezvous][store][restart]") {
  // A whole node dies: its peers' ranks fail first (their connections reset) and a survivor
  // reports that before the dead node's heartbeat timeout. The dead node's silence keeps
  // counting from its last heartbeat: the round forms once it exceeds --node-timeout (10 s
  // here), not a full timeout after the round opened nor at the end of the last call (30 s).
  StoreOptions o = elastic(2, 3, 3);
  o.last_call = seconds(30);
  Fixture f(o);
  f.join("a", "n0", 1);
  f.join("b", "n1", 1);
  REQUIRE(f.join("c", "n2", 1)["phase"] == "running");
  for (int i = 0; i < 4; ++i) {  // n2 dies at t=0; the others beat every 2 s until t=8
    f.clock.advance(seconds(2));
    f.beat("a");
    f.beat("b");
  }
  REQUIRE(f.send("b", {{"op", "fail"}, {"reason", "gloo: connection reset by peer"}}).body["round"] == 1);
  f.clock.advance(milliseconds(500));
  f.join("a", "n0", 1);
  REQUIRE(f.join("b", "n1", 1)["phase"] == "joining");  // n2 has been silent 8.5 s: not yet lost
  f.clock.advance(milliseconds(1600));                  // t=10.1: silent for more than 10 s
  auto r = f.beat("a");
  REQUIRE(r["phase"] == "running");
  CHECK(share(r).nnodes == 2);
  CHECK(f.store->status().lost == std::vector<std::string>{"n2"});
  CHECK(r["lost"] == json::array({"n2"}));
}

TEST_CASE("store: restarts — survivors that were heart-beating get a full timeout to stop their ranks and re-join",
          "[rendezvous][store][restart]") {
  Fixture f(elastic(2, 3, 3));
  f.join("a", "n0", 1);
  f.join("b", "n1", 1);
  REQUIRE(f.join("c", "n2", 1)["phase"] == "running");
  f.clock.advance(seconds(2));
  f.beat("a");
  f.beat("c");
  f.clock.advance(seconds(1));  // n1's last beat was 3 s ago (one missed at most): alive
  REQUIRE(f.send("a", {{"op", "fail"}, {"reason", "rank 0 exited with code 1"}}).body["round"] == 1);
  f.clock.advance(seconds(9));  // the agents tear their ranks down without beating (up to 10 s)
  f.join("a", "n0", 1);
  f.join("c", "n2", 1);
  auto r = f.join("b", "n1", 1);
  REQUIRE(r["phase"] == "running");
  CHECK(share(r).nnodes == 3);
  CHECK(f.store->status().lost.empty());
}

TEST_CASE("store: lose_host — a running node the launcher knows is gone re-forms the job at once, counted once",
          "[rendezvous][store][restart][lose_host]") {
  Fixture f(elastic(2, 3, 2));
  f.join("a", "n0", 1);
  f.join("b", "n1", 2);
  REQUIRE(f.join("c", "n2", 1)["phase"] == "running");
  // No clock movement: the store learns it from the launcher, not from missed heartbeats.
  REQUIRE(f.store->lose_host("n1", "ssh to n1 ended (exit 255)"));
  auto s = f.store->status();
  REQUIRE(s.phase == Phase::joining);
  CHECK(s.restarts == 1);
  CHECK(s.lost == std::vector<std::string>{"n1"});
  CHECK_THAT(s.restart_reason, Contains("node 'n1' (node rank 1) was lost: ssh to n1 ended"));
  f.join("a", "n0", 1);
  auto r = f.join("c", "n2", 1);  // every survivor back: no wait for n1
  REQUIRE(r["phase"] == "running");
  CHECK(share(r).world_size == 2);
  // The host may come back with a new agent (a new node id): with room below MAX it waits.
  auto back = f.join("d", "n1", 2);
  CHECK(back["phase"] == "joining");
  CHECK(f.store->status().restarts == 1);
  // Unknown hosts and a finished or failed job are not news.
  CHECK_FALSE(f.store->lose_host("n9", "?"));
}

TEST_CASE("store: lose_host — while a round forms the lost node is not waited for, without restarts the job fails",
          "[rendezvous][store][restart][lose_host]") {
  SECTION("a survivor that has not re-joined") {
    Fixture f(elastic(2, 3, 2));
    f.join("a", "n0", 1);
    f.join("b", "n1", 1);
    f.join("c", "n2", 1);
    f.send("a", {{"op", "fail"}, {"reason", "rank 0 exited with code 1"}});
    f.join("a", "n0", 1);
    f.join("b", "n1", 1);
    CHECK(f.store->status().phase == Phase::joining);  // n2 alive and not back yet
    REQUIRE(f.store->lose_host("n2", "ssh to n2 ended"));
    auto s = f.store->status();
    CHECK(s.phase == Phase::running);  // every surviving node is back, at least MIN
    CHECK(s.lost == std::vector<std::string>{"n2"});
    CHECK(s.restarts == 1);
  }
  SECTION("no restarts: the job fails, naming the node") {
    Fixture f(nodes(2, 2));
    f.join("a", "n0", 1);
    REQUIRE(f.join("b", "n1", 1)["phase"] == "running");
    REQUIRE(f.store->lose_host("n1", "ssh to n1 ended"));
    auto s = f.store->status();
    CHECK(s.phase == Phase::failed);
    CHECK(s.failed_nodes == std::vector<std::string>{"n1"});
    CHECK_THAT(s.reason, Contains("was lost: ssh to n1 ended"));
    CHECK_FALSE(f.store->lose_host("n0", "late"));  // a failed job has nothing more to lose
  }
}
