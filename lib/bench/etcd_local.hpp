#pragma once
// A three-member etcd cluster on 127.0.0.1 for `mtrain bench rendezvous --backend etcd`: the
// `etcd` binary from PATH, free ports, data in a temporary folder; stopped (SIGTERM, then
// SIGKILL after 5 s) and removed by the destructor. cpu_seconds() sums the members' user and
// system time from /proc/PID/stat, the etcd side of what the bench measures.
#include <string>
#include <sys/types.h>
#include <vector>

#include "lib/rendezvous/endpoint.hpp"

namespace mtrain::bench {

class LocalEtcd {
 public:
  // Starts the members and waits (at most `timeout_ms`) until each answers /version;
  // mtrain::Error when etcd is not installed or the cluster does not come up (naming its log).
  explicit LocalEtcd(int timeout_ms = 30000);
  ~LocalEtcd();
  LocalEtcd(const LocalEtcd&) = delete;
  LocalEtcd& operator=(const LocalEtcd&) = delete;

  const std::vector<rendezvous::Endpoint>& endpoints() const { return clients_; }
  std::string endpoint_list() const;
  double cpu_seconds() const;
  std::string version() const { return version_; }
  // SIGKILL member k (as a host that dies would): the other two keep a quorum.
  void kill_member(size_t k);

 private:
  void stop();
  std::string dir_;
  std::vector<rendezvous::Endpoint> clients_;
  std::vector<pid_t> pids_;
  std::string version_;
};

// The summed user + system CPU seconds of these processes (/proc/PID/stat), 0 for one gone.
double process_cpu_seconds(const std::vector<pid_t>& pids);

}  // namespace mtrain::bench
