#pragma once
// Keep-alive for a node agent once the job has formed: a thread sends a heartbeat every
// `interval` and calls `on_end` once, with the job state, when the job stops being "running"
// in the agent's round `round` (another node failed or went silent, or the launcher aborted:
// the agent then tears its ranks down and prints the reason, which names the node; or the
// store opened a newer round: the job restarts) or when the store has not answered for
// `give_up_after` (the launcher holding it is gone). After a round change it goes on beating
// until stopped: the agent tears its ranks down meanwhile (SIGKILL only after --grace-period
// for a rank stuck in a collective), which may take longer than the store's heartbeat timeout,
// and a silent agent would be taken for a dead node and forgotten.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "lib/rendezvous/client.hpp"

namespace mtrain::rendezvous {

class HeartbeatLoop {
 public:
  HeartbeatLoop(Membership& client, Duration interval, Duration give_up_after, std::function<void(const JobState&)> on_end,
                int round = 0);
  ~HeartbeatLoop();  // stops the thread (waits at most one op_timeout)
  void stop();

 private:
  void run();
  Membership& client_;
  Duration interval_, give_up_;
  int round_;
  std::function<void(const JobState&)> on_end_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace mtrain::rendezvous
