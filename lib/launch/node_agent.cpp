#include "lib/launch/node_agent.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/launch/net_address.hpp"
#include "lib/rendezvous/client.hpp"
#include "lib/launch/etcd_client.hpp"
#include "lib/rendezvous/etcd_rendezvous.hpp"
#include "lib/rendezvous/heartbeat.hpp"
#include "lib/rendezvous/server.hpp"

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace mtrain::launch {

namespace {

using rendezvous::Duration;

// Heartbeats run on their own thread; when the job stops being "running" in this node's round
// (it failed, or the store opened a new round to restart it) the attempt is stopped on the
// supervisor's loop. A local failure is reported over a second connection
// (the heartbeat thread owns the first).
// The registered node's second handle on the rendezvous, for reports from another thread: a
// second connection to the mtrain store; the same object for etcd (its calls are independent).
using SecondMembership = std::function<std::unique_ptr<rendezvous::Membership>()>;

class SameMembership final : public rendezvous::Membership {
 public:
  explicit SameMembership(rendezvous::Membership& m) : m_(m) {}
  rendezvous::JoinResult join() override { return m_.join(); }
  rendezvous::JobState heartbeat() override { return m_.heartbeat(); }
  rendezvous::JobState report_failure(const std::string& reason) override { return m_.report_failure(reason); }
  rendezvous::JobState leave() override { return m_.leave(); }
  const std::string& node_id() const override { return m_.node_id(); }

 private:
  rendezvous::Membership& m_;
};

class RendezvousWatcher : public AttemptWatcher {
 public:
  RendezvousWatcher(rendezvous::Membership& hb_client, SecondMembership report_opt, Duration interval,
                    Duration give_up, int round, ScaleUp scale_up)
      : hb_client_(hb_client), report_opt_(std::move(report_opt)), interval_(interval), give_up_(give_up), round_(round),
        scale_up_(scale_up) {}

  void start(asio::io_context& io, std::function<void(ExternalStop)> stop) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      io_ = &io;
      stop_ = std::move(stop);
    }
    auto on_end = [this](const rendezvous::JobState& s) {
      std::string reason;
      int notice = 0;  // a membership change lets the ranks save first (scale_up.hpp)
      if (s.phase == rendezvous::Phase::failed) reason = s.reason;
      else if (s.round != round_) {
        reason = "the job restarts: " + s.restart_reason;
        notice = round_end_notice(scale_up_, s.membership_change);
        if (notice)
          std::fprintf(stderr, "mtrain: the job re-forms (%s): this node's ranks get SIGUSR1 to save first\n",
                       s.restart_reason.c_str());
      } else return;
      std::lock_guard<std::mutex> lock(mu_);
      if (!io_) return;
      asio::post(*io_, [this, reason, notice] {
        std::function<void(ExternalStop)> stop;
        {
          std::lock_guard<std::mutex> lock(mu_);
          stop = stop_;
        }
        if (stop) stop({reason, kExitFailure, notice});
      });
    };
    loop_ = std::make_unique<rendezvous::HeartbeatLoop>(hb_client_, interval_, give_up_, on_end, round_);
  }

  void rank_failed(const std::string& what) override {
    try {
      report_opt_()->report_failure(what);
    } catch (const Error& e) {
      std::fprintf(stderr, "mtrain: could not tell the rendezvous store about the failure: %s\n", e.message().c_str());
    }
  }

  void finish() override {
    loop_.reset();  // joins the heartbeat thread
    std::lock_guard<std::mutex> lock(mu_);
    io_ = nullptr;
    stop_ = nullptr;
  }

 private:
  rendezvous::Membership& hb_client_;
  SecondMembership report_opt_;
  Duration interval_, give_up_;
  int round_;
  ScaleUp scale_up_;
  std::mutex mu_;
  asio::io_context* io_ = nullptr;
  std::function<void(ExternalStop)> stop_;
  std::unique_ptr<rendezvous::HeartbeatLoop> loop_;
};

// EOF (or an error) on stdin: the ssh connection from the launcher is gone. Watched from the
// agent's start by a thread blocked in read(2): before the ranks run (joining the rendezvous) EOF
// ends the agent at once (SIGTERM to itself: nothing to tear down yet); while they run it stops
// the attempt on the supervisor's loop. The thread is detached; it ends with the process.
class StdinWatcher : public AttemptWatcher {
 public:
  // `record`: the pgid record to remove when EOF ends the agent before its ranks run.
  void watch(std::string record) {
    record_ = std::move(record);
    std::thread([this] {
      char buf[256];
      for (;;) {
        ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n > 0) continue;  // the launcher sends nothing after the secrets
        if (n < 0 && errno == EINTR) continue;
        break;
      }
      std::lock_guard<std::mutex> lock(mu_);
      eof_ = true;
      if (io_) {
        asio::post(*io_, [this] { fire(); });
      } else if (!done_) {
        std::fprintf(stderr, "mtrain: the launcher's ssh connection closed (stdin reached EOF); stopping\n");
        if (!record_.empty()) ::unlink(record_.c_str());
        ::raise(SIGTERM);
      }
    }).detach();
  }
  void start(asio::io_context& io, std::function<void(ExternalStop)> stop) override {
    std::lock_guard<std::mutex> lock(mu_);
    io_ = &io;
    stop_ = std::move(stop);
    if (eof_) asio::post(io, [this] { fire(); });
  }
  void finish() override {
    std::lock_guard<std::mutex> lock(mu_);
    io_ = nullptr;
    stop_ = nullptr;
    done_ = true;  // the agent is ending on its own: an EOF now changes nothing
  }

 private:
  void fire() {
    std::function<void(ExternalStop)> stop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop = stop_;
    }
    if (stop) stop({"the launcher's ssh connection closed (stdin reached EOF); stopping this node's ranks", 128 + 1});
  }
  std::mutex mu_;
  asio::io_context* io_ = nullptr;
  std::function<void(ExternalStop)> stop_;
  bool eof_ = false, done_ = false;
  std::string record_;
};

std::string this_hostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// The record lives as long as the agent: removed (and its folder, once empty) on the way out.
struct PgidRecord {
  std::string dir, path;
  PgidRecord(const std::string& d, const std::string& node) : dir(d) {
    if (dir.empty()) return;
    std::error_code ec;
    fs::create_directories(dir, ec);
    ::chmod(dir.c_str(), 0700);
    path = (fs::path(dir) / (node + ".pgid")).string();
    std::ofstream(path) << getpgrp() << "\n";
  }
  ~PgidRecord() {
    if (path.empty()) return;
    std::error_code ec;
    fs::remove(path, ec);
    fs::remove(dir, ec);  // fails while other nodes' records are there
  }
};

// This node's rank count, from its own GPUs and --nproc-per-node, before joining: what it offers
// the store. The node rank, first rank and world come from the store's assignment (round_options).
int local_slots(plan::PlanOptions probe, const plan::HostFacts& facts) {
  probe.nnodes = 1;
  probe.node_rank = 0;
  probe.first_rank = -1;
  probe.world_size = 0;
  return static_cast<int>(plan::build_plan(probe, facts).nodes.at(0).workers.size());
}

// The node whose address is the endpoint's hosts the store, listening only there, unless the
// ssh launcher holds it (store_elsewhere). Null when this node only joins.
std::unique_ptr<rendezvous::Server> host_store_if_ours(const AgentOptions& a, const plan::PlanOptions& p) {
  if (a.store_elsewhere || !is_local_address(a.endpoint.host)) return nullptr;
  rendezvous::ServerOptions so_store;
  so_store.listen = a.endpoint;
  so_store.store.min_nodes = a.nnodes.min;
  so_store.store.max_nodes = a.nnodes.max;
  so_store.store.join_timeout = a.join_timeout;
  so_store.store.last_call = a.last_call;
  so_store.store.heartbeat_timeout = a.node_timeout;
  so_store.store.expected_hosts = a.expected_hosts;
  so_store.store.token = a.token;
  so_store.store.master_port = p.master_port;
  so_store.store.run_id = p.rdzv_id.empty() ? p.job_id : p.rdzv_id;
  so_store.store.max_restarts = a.max_restarts;
  so_store.store.scale_up = store_scales_up(a.scale_up, a.nnodes.elastic());
  auto server = std::make_unique<rendezvous::Server>(so_store);
  try {
    server->start();
    std::fprintf(stderr, "mtrain: rendezvous store for %s nodes listening on %s\n",
                 a.nnodes.elastic() ? fmt::format("{}..{}", a.nnodes.min, a.nnodes.max).c_str()
                                    : std::to_string(a.nnodes.min).c_str(),
                 a.endpoint.str().c_str());
  } catch (const Error& e) {
    // Another node agent on this machine (several nodes of one job on one host) holds it;
    // join it like every other node. A foreign listener would not know the token.
    server.reset();
    std::fprintf(stderr, "mtrain: %s is taken on this machine; joining the store there\n", a.endpoint.str().c_str());
  }
  return server;
}

// How this node registers: its name, the address the store sees it from, and its slots.
rendezvous::ClientOptions join_options(const AgentOptions& a, const std::string& node, int slots) {
  rendezvous::ClientOptions co;
  co.server = a.endpoint;
  co.token = a.token;
  co.host = node;
  co.addr = route_source_address(a.endpoint.host, a.endpoint.port);
  co.slots = slots;
  co.join_timeout = a.join_timeout + Duration(5000);  // the store's own timeout names the missing nodes first
  if (!a.quiet_progress)
    co.on_progress = [](const std::string& line) { std::fprintf(stderr, "mtrain: rendezvous: %s\n", line.c_str()); };
  return co;
}

// The registered node's second connection (reports and the end-of-round question; the
// heartbeat thread owns the first): quiet, and quick to give up.
rendezvous::ClientOptions report_options(rendezvous::ClientOptions co, const std::string& node_id) {
  co.node_id = node_id;
  co.on_progress = nullptr;
  co.op_timeout = Duration(3000);
  return co;
}

// The same node, registered in etcd instead of the mtrain store (rendezvous/etcd_rendezvous.hpp).
rendezvous::EtcdRendezvousOptions etcd_options(const AgentOptions& a, const plan::PlanOptions& p,
                                               const rendezvous::ClientOptions& co) {
  rendezvous::EtcdRendezvousOptions eo;
  eo.run_id = p.rdzv_id.empty() ? p.job_id : p.rdzv_id;
  eo.token = a.token;
  eo.host = co.host;
  eo.addr = co.addr;
  eo.slots = co.slots;
  eo.min_nodes = a.nnodes.min;
  eo.max_nodes = a.nnodes.max;
  eo.max_restarts = a.max_restarts;
  eo.master_port = p.master_port;
  eo.join_timeout = a.join_timeout;
  eo.last_call = a.last_call;
  eo.node_timeout = a.node_timeout;
  eo.scale_up = store_scales_up(a.scale_up, a.nnodes.elastic());
  eo.on_progress = co.on_progress;
  return eo;
}

// A first assignment that contradicts --node-rank is refused: the user fixed it by hand.
void check_node_rank(const rendezvous::JoinResult& joined, const AgentOptions& a, const std::string& node) {
  if (joined.round == 0 && a.expected_node_rank >= 0 && a.expected_node_rank != joined.node_rank)
    throw RuntimeFailure(fmt::format("node '{}' was started as node rank {} but the rendezvous made it node rank {}",
                                     node, a.expected_node_rank, joined.node_rank),
                         "");
}

// This node's plan options for one round: the store's assignment (node rank, first rank,
// world, master) over the node's own.
plan::PlanOptions round_options(plan::PlanOptions rp, const rendezvous::JoinResult& joined, const std::string& node,
                                const AgentOptions& a) {
  rp.nnodes = joined.assignment.nnodes;
  rp.node_rank = joined.node_rank;
  rp.first_rank = joined.self().first_rank;
  rp.world_size = joined.assignment.world_size;
  if (rp.master_addr.empty()) rp.master_addr = joined.assignment.master_addr;
  rp.master_port = joined.assignment.master_port;
  rp.node_name = node;
  rp.rdzv_backend = a.etcd ? config::RdzvBackend::Etcd : config::RdzvBackend::Mtrain;
  rp.rdzv_endpoint = a.endpoint.str();
  // A restarted program learns that the job re-formed and why (the bundled trainer resumes
  // and names the lost node: lib/trainer/loop/elastic_resume.hpp).
  rp.extra_env["MTRAIN_RDZV_ROUND"] = std::to_string(joined.round);
  if (!joined.restart_reason.empty()) rp.extra_env["MTRAIN_RESTART_REASON"] = joined.restart_reason;
  if (!joined.lost.empty()) rp.extra_env["MTRAIN_LOST_NODES"] = str::join(joined.lost, ",");
  return rp;
}

// What every round of one agent shares.
struct AgentRun {
  const plan::PlanOptions& p;  // this node's options (no restarts of its own)
  const plan::HostFacts& facts;
  const AgentOptions& a;
  const SuperviseOptions& so;
  ProcessRunner& runner;
  const std::string& node;
  AttemptWatcher* stdin_watch;  // null unless a.watch_stdin
  rendezvous::Membership& client;  // registered; joins each round
  SecondMembership report;
  Duration interval;            // between heartbeats
};

// One round: run the assigned ranks under the supervisor while heartbeating. They stop when
// they end, when the store says the job failed or opened a new round, or when the launcher's
// ssh connection closes. A node that cannot start its ranks tells the store, so every node stops.
int run_round(const AgentRun& run, const rendezvous::JoinResult& joined) {
  const plan::PlanOptions rp = round_options(run.p, joined, run.node, run.a);
  const plan::LaunchPlan lp = plan::build_plan(rp, run.facts);
  const auto& self = joined.self();
  std::fprintf(stderr, "mtrain: node %s is node %d of %d (ranks %d-%d of %d), master %s:%d%s\n", run.node.c_str(),
               joined.node_rank, rp.nnodes, self.first_rank, self.first_rank + self.local_world_size - 1,
               rp.world_size, rp.master_addr.c_str(), rp.master_port,
               joined.restarts ? fmt::format(", restart {}", joined.restarts).c_str() : "");

  RendezvousWatcher rdzv(run.client, run.report, run.interval, run.a.node_timeout, joined.round, run.a.scale_up);
  SuperviseOptions round_so = run.so;
  round_so.watchers.push_back(&rdzv);
  if (run.stdin_watch) round_so.watchers.push_back(run.stdin_watch);
  round_so.first_attempt = joined.restarts;
  try {
    return supervise(lp, run.runner, round_so);
  } catch (...) {
    try {
      run.client.report_failure("the node agent could not start its ranks");
    } catch (...) {
    }
    throw;
  }
}

// After a round's ranks end: has the job opened a newer round (a failure here or elsewhere, a
// lost node, with restarts left, or an arrival)? Then this node joins it; else it finishes.
bool job_reforms(const AgentRun& run, int round) {
  rendezvous::JobState now;
  try {
    now = run.report()->heartbeat();
  } catch (const Error& e) {
    // The store is gone or no longer knows this node: nothing to re-join. With the mtrain store
    // that is its host lost (or stopped): say so, naming it, not as one unanswered connection.
    if (run.a.etcd)
      std::fprintf(stderr, "mtrain: node %s: cannot learn from etcd whether the job re-forms: %s\n", run.node.c_str(),
                   e.message().c_str());
    else
      std::fprintf(stderr,
                   "mtrain: node %s: the rendezvous store's host %s (%s) is lost: it held the store, so the job "
                   "cannot re-form without it (%s). Keep the rendezvous in etcd (--rdzv-backend etcd, "
                   "docs/multinode.md) where the loss of any node must be survived.\n",
                   run.node.c_str(), run.a.endpoint.host.c_str(), run.a.endpoint.str().c_str(), e.message().c_str());
    return false;
  }
  if (now.phase == rendezvous::Phase::failed || now.round <= round) return false;
  std::fprintf(stderr, "mtrain: node %s: the job restarts (%s); joining again\n", run.node.c_str(),
               now.restart_reason.c_str());
  return true;
}

// The store's host keeps serving until every node has finished or the job failed, so the
// others learn how it ended; a node that succeeded in a job that failed exits with failure.
int serve_until_job_ends(rendezvous::Server& server, int rc, Duration interval) {
  auto end = server.wait_until(
      [](const rendezvous::StoreStatus& s) {
        return s.phase == rendezvous::Phase::finished || s.phase == rendezvous::Phase::failed;
      },
      Duration(24LL * 3600 * 1000));
  if (rc == 0 && end.phase == rendezvous::Phase::failed) {
    std::fprintf(stderr, "mtrain: this node finished, but the job failed: %s\n", end.reason.c_str());
    rc = kExitFailure;
  }
  // Others learn of a failure on their next heartbeat: give them two before the store goes.
  if (end.phase == rendezvous::Phase::failed) std::this_thread::sleep_for(2 * interval);
  server.stop();
  return rc;
}

}  // namespace

// The node's life, in the order of the store's protocol (rendezvous/store.hpp; its messages in
// quotes):
//   1. register: count this node's slots, host the store if the endpoint is this machine's,
//      and connect;
//   2. each round: "join" (blocks until the store assigns node ranks), spawn and supervise the
//      assigned ranks while a thread sends "heartbeat"s (a local failure goes as "fail"), then
//      one more "heartbeat" asks whether the job opened a new round; if so, join again;
//   3. teardown: a node whose ranks succeeded sends "leave"; the store's host serves on until
//      the job has ended everywhere.
int run_node_agent(plan::PlanOptions p, const plan::HostFacts& facts, const AgentOptions& a, const SuperviseOptions& so,
                   ProcessRunner& runner) {
  const std::string node = a.node_name.empty() ? this_hostname() : a.node_name;
  PgidRecord record(a.record_dir, node);
  // Lives until the process ends: its thread may still hold it after this function returns.
  static StdinWatcher stdin_watch;
  if (a.watch_stdin) stdin_watch.watch(record.path);
  // Restarts are the job's (the store counts them and opens a new round), not this node's.
  p.max_restarts = 0;

  const int slots = local_slots(p, facts);
  std::unique_ptr<rendezvous::Server> server = a.etcd ? nullptr : host_store_if_ours(a, p);
  const rendezvous::ClientOptions co = join_options(a, node, slots);
  std::unique_ptr<rendezvous::Membership> membership;
  SecondMembership second;
  if (a.etcd) {
    membership =
        std::make_unique<rendezvous::EtcdRendezvous>(etcd_options(a, p, co), connect_etcd(a.etcd_client, a.etcd_api));
    second = [m = membership.get()] { return std::make_unique<SameMembership>(*m); };
  } else {
    membership = std::make_unique<rendezvous::Client>(co);
    second = [report = report_options(co, membership->node_id())] { return std::make_unique<rendezvous::Client>(report); };
  }
  rendezvous::Membership& client = *membership;
  const AgentRun run{p, facts, a, so, runner, node, a.watch_stdin ? &stdin_watch : nullptr, client, second,
                     std::max(Duration(200), std::min(Duration(2000), a.node_timeout / 5))};

  int rc = 0;
  for (;;) {
    const rendezvous::JoinResult joined = client.join();
    check_node_rank(joined, a, node);
    rc = run_round(run, joined);
    if (!job_reforms(run, joined.round)) break;
  }
  try {
    if (rc == 0) client.leave();
  } catch (const Error& e) {
    std::fprintf(stderr, "mtrain: could not tell the rendezvous store that this node finished: %s\n", e.message().c_str());
  }
  if (server) rc = serve_until_job_ends(*server, rc, run.interval);
  return rc;
}

}  // namespace mtrain::launch
