#pragma once
// The communicator: the collectives a strategy needs, each asynchronous with a timeout, and byte
// counters per collective. The bytes move through a transport (transport.hpp): the c10d backend
// (Gloo on CPU, NCCL in CUDA builds), or shared memory between the ranks of one host.
//
// Counting (docs/architecture.md §5): payload = bytes of the tensor handed to the collective;
// wire = what each rank sends with a ring algorithm: payload·2(N−1)/N for all-reduce,
// payload·(N−1)/N for all-gather / reduce-scatter / all-to-all (payload being the full,
// world-sized buffer), payload·(N−1)/N for broadcast (pipelined ring, averaged over ranks).
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>
#include <string>

#include "lib/trainer/comm/c10d_transport.hpp"
#include "lib/trainer/comm/compat.hpp"
#include "lib/trainer/comm/shm_transport.hpp"

namespace mtrain::trainer {

struct CommStats {
  int64_t calls = 0;
  double payload_bytes = 0;
  double wire_bytes = 0;
};
using CommCounters = std::map<std::string, CommStats>;

// One collective in flight. wait() blocks until it is done (at most the communicator's timeout,
// then throws mtrain::Error naming the collective); a default-constructed handle is done.
class CommHandle {
 public:
  CommHandle() = default;
  void wait();
  bool done() const { return !work_ && !local_.valid() && !finish_; }

 private:
  friend class Communicator;
  compat::WorkPtr work_;
  std::shared_future<void> local_;  // a shared-memory collective (ShmTransport)
  std::function<void()> finish_;  // local step after the wire part (e.g. the reduce-scatter sum)
  std::chrono::milliseconds timeout_{0};
  std::string what_;
  std::function<std::string()> absent_;  // on failure: who never reached it (absent_ranks.hpp)
};

enum class BackendKind { Gloo, Nccl };

struct CommOptions {
  int rank = 0;
  int world = 1;
  std::chrono::milliseconds timeout{300000};
  BackendKind backend = BackendKind::Gloo;
  std::string hostname;  // Gloo: the address to bind; empty = this host's default
  // Gloo: the network interfaces to bind (GLOO_SOCKET_IFNAME, comma-separated, as
  // torch.distributed reads it); they win over `hostname`. Nodes whose hostname does not resolve
  // to the address their peers reach need it (Gloo would bind the loopback address).
  std::vector<std::string> interfaces;
  // Every rank of the world is on this host: fp32 CPU all-reduces, reduce-scatters and
  // all-gathers go through shared memory (ShmCollectives) instead of Gloo; the rest (other
  // dtypes, broadcast, barrier) stays on Gloo. Falls back to Gloo by itself when
  // the segment cannot be made (the group agrees).
  bool shared_memory = false;
  int64_t shm_chunk_floats = 0;  // 0: ShmCollectives's default (tests use small chunks)
  // Polled after a collective failed: true when the process is being stopped, so the ranks that
  // never reached it are not waited for (find_absent_ranks).
  std::function<bool()> stopping;
};

class Communicator {
 public:
  // Joins the group through `store` (every rank passes the same store contents).
  Communicator(const compat::StorePtr& store, const CommOptions& o);

  int rank() const { return opt_.rank; }
  int world() const { return opt_.world; }
  std::chrono::milliseconds timeout() const { return opt_.timeout; }
  BackendKind backend() const { return opt_.backend; }

  // Sum over ranks, in place. `counter` names the entry the bytes are counted under.
  CommHandle all_reduce(at::Tensor t, const std::string& counter = "all_reduce");
  // input: world·k elements (contiguous); output: k elements = Σ_ranks input[rank·k, (rank+1)·k).
  CommHandle reduce_scatter(at::Tensor input, at::Tensor output);
  // reduce_scatter of a world·k-element input given as pieces: fp32 CPU tensors (contiguous)
  // placed at `offsets` (ascending, not overlapping), zeros elsewhere. Only where
  // reduce_scatter_takes_pieces(): the shared-memory path reads the pieces where they are, so
  // the caller need not flatten them into one buffer first.
  bool reduce_scatter_takes_pieces() const { return shm_ != nullptr; }
  CommHandle reduce_scatter_pieces(std::vector<at::Tensor> pieces, const std::vector<int64_t>& offsets,
                                   at::Tensor output);
  // input: k elements; output: world·k elements, rank r's input at [r·k, (r+1)·k).
  CommHandle all_gather(at::Tensor input, at::Tensor output);
  CommHandle broadcast(at::Tensor t, int root);
  void barrier();

  // Counters are shared with every sub-group made from this communicator (a sub-group's
  // collectives count with the sub-group's size in the wire factor).
  CommCounters counters() const;
  void reset_counters();

  // A communicator over `ranks` (global ranks, ascending; this rank must be one of them), its
  // own backend joined through the parent's store under the prefix `tag` (every member passes
  // the same tag and ranks; groups with different members need different tags). Collective
  // among the members only.
  std::unique_ptr<Communicator> subgroup(const std::string& tag, const std::vector<int>& ranks);

 private:
  struct Counters {
    std::mutex mu;
    CommCounters c;
  };
  Communicator(const compat::StorePtr& store, const CommOptions& o, std::shared_ptr<Counters> sink);
  void count(const std::string& name, double payload, double wire_factor);
  void join_shared_memory();
  // The transport of a call on these tensors: shared memory where it takes every one, else c10d.
  Transport& via(const at::Tensor& a, const at::Tensor& b);
  CommHandle issue(Pending p, const std::string& what);

  // Which ranks never reached collective number `seq` (this one failed), as a clause.
  std::function<std::string()> absent_probe(uint64_t seq) const;

  CommOptions opt_;
  compat::StorePtr store_;
  std::vector<int> members_;  // a sub-group's global rank per group rank; empty: the world
  uint64_t seq_ = 0;          // collectives issued so far (the same sequence on every rank)
  std::string shm_fallback_;
  std::unique_ptr<C10dTransport> c10d_;
  std::shared_ptr<Counters> sink_;
  std::unique_ptr<ShmTransport> shm_;  // only when every rank of the group is on this host

 public:
  bool uses_shared_memory() const { return shm_ != nullptr; }
  // Why shared memory was asked for but not joined (a full /dev/shm, …); "" otherwise.
  const std::string& shared_memory_fallback() const { return shm_fallback_; }
};

}  // namespace mtrain::trainer
