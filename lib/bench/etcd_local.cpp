#include "lib/bench/etcd_local.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <boost/asio.hpp>
#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/rendezvous/etcd_http.hpp"

namespace mtrain::bench {

namespace fs = std::filesystem;

namespace {

uint16_t free_loopback_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  for (std::string d; std::getline(ss, d, ':');)
    if (!d.empty() && ::access((fs::path(d) / name).c_str(), X_OK) == 0) return true;
  return false;
}

pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(fmt::format("cannot start etcd: fork failed"), "", kExitFailure);
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace

double process_cpu_seconds(const std::vector<pid_t>& pids) {
  double total = 0;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  for (pid_t p : pids) {
    if (p <= 0) continue;
    std::ifstream in(fmt::format("/proc/{}/stat", p));
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    // After "pid (comm) ": state is field 3; utime and stime are fields 14 and 15.
    unsigned long long utime = 0, stime = 0;
    for (int k = 3; k <= 15 && rest >> field; ++k) {
      if (k == 14) utime = std::stoull(field);
      if (k == 15) stime = std::stoull(field);
    }
    total += static_cast<double>(utime + stime) / tick;
  }
  return total;
}

LocalEtcd::LocalEtcd(int timeout_ms) {
  if (!on_path("etcd"))
    throw Error("etcd is not installed: `mtrain bench rendezvous --backend etcd` starts a local 3-member cluster",
                "Install etcd (Debian: apt-get install etcd-server) or give --etcd-endpoint of a running cluster.");
  dir_ = (fs::temp_directory_path() / fmt::format("mtrain-bench-etcd-{}", ::getpid())).string();
  fs::create_directories(dir_);
  std::vector<rendezvous::Endpoint> peers;
  for (int k = 0; k < 3; ++k) {
    clients_.push_back({"127.0.0.1", free_loopback_port()});
    peers.push_back({"127.0.0.1", free_loopback_port()});
  }
  std::string cluster;
  for (int k = 0; k < 3; ++k) cluster += fmt::format("{}e{}=http://{}", k ? "," : "", k, peers[k].str());
  for (int k = 0; k < 3; ++k) {
    const std::string client = "http://" + clients_[k].str(), peer = "http://" + peers[k].str();
    pids_.push_back(
        spawn({"etcd", "--name", fmt::format("e{}", k), "--data-dir", fmt::format("{}/e{}", dir_, k),
               "--listen-client-urls", client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
               "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster, "--initial-cluster-state", "new",
               "--initial-cluster-token", fmt::format("mtrain-bench-{}", ::getpid())},
              fmt::format("{}/e{}.log", dir_, k)));
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (int k = 0; k < 3; ++k) {
    for (;;) {
      try {
        rendezvous::EtcdOptions o;
        o.endpoints = {clients_[k]};
        o.op_timeout = rendezvous::Duration(1000);
        rendezvous::EtcdHttp kv(o);
        version_ = kv.version().value("etcdserver", "");
        kv.range_prefix("/mtrain-bench-ready/");  // answered only once the cluster has a leader
        break;
      } catch (const Error& e) {
        if (std::chrono::steady_clock::now() > end) {
          const std::string log = fmt::format("{}/e{}.log", dir_, k);
          stop();
          throw Error(fmt::format("the local etcd cluster did not come up within {} ms: {}", timeout_ms, e.message()),
                      "see the member's log " + log, kExitFailure);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
}

LocalEtcd::~LocalEtcd() { stop(); }

void LocalEtcd::stop() {
  // A member kill_member() ended is -1 here: kill(-1) would signal every process we may.
  for (pid_t p : pids_)
    if (p > 0) ::kill(p, SIGTERM);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (pid_t p : pids_) {
    if (p <= 0) continue;
    while (::waitpid(p, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  pids_.clear();
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

std::string LocalEtcd::endpoint_list() const {
  std::string out;
  for (const auto& e : clients_) out += (out.empty() ? "" : ",") + e.str();
  return out;
}

}  // namespace mtrain::bench

namespace mtrain::bench {

double LocalEtcd::cpu_seconds() const { return process_cpu_seconds(pids_); }

void LocalEtcd::kill_member(size_t k) {
  if (k >= pids_.size() || pids_[k] <= 0) return;
  ::kill(pids_[k], SIGKILL);
  ::waitpid(pids_[k], nullptr, 0);
  pids_[k] = -1;
}

}  // namespace mtrain::bench
