#include "lib/trainer/comm/communicator.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/trainer/comm/absent_ranks.hpp"
#include "lib/trainer/comm/exception_text.hpp"

namespace mtrain::trainer {

namespace {
double bytes_of(const at::Tensor& t) { return static_cast<double>(t.numel() * t.element_size()); }

void check_flat(const at::Tensor& t, const char* what) {
  if (!t.is_contiguous()) {
    throw RuntimeFailure(fmt::format("{}: the tensor handed to a collective must be contiguous", what));
  }
}
}  // namespace

void CommHandle::wait() {
  // A failed collective names the ranks that never reached it (absent_ranks.hpp), then what the
  // backend said, without its C++ backtrace (exception_text.hpp).
  const char* hint = "check that every rank is alive and runs the same job; raise comm.timeout_s "
                     "if steps are legitimately slow";
  auto failed = [&](const std::string& how, const std::string& said) {
    const std::string who = absent_ ? absent_() : "";
    return Error(fmt::format("{} {}{}{}", what_, how, who.empty() ? "" : ": " + who, said.empty() ? "" : " (" + said + ")"),
                 hint, kExitFailure);
  };
  if (local_.valid()) {
    // ShmCollectives bounds each of its waits by the same timeout; the margin only covers a
    // queue of several collectives ahead of this one.
    if (local_.wait_for(timeout_ * 2 + std::chrono::seconds(5)) != std::future_status::ready) {
      throw failed(fmt::format("did not complete within {} s", timeout_.count() / 500.0), "");
    }
    auto f = std::move(local_);
    local_ = {};
    try {
      f.get();  // rethrows the peer timeout as its mtrain::Error
    } catch (const Error& e) {
      throw failed("failed", e.message());
    }
  }
  if (work_) {
    bool ok = false;
    try {
      ok = work_->wait(timeout_);
    } catch (const std::exception& e) {
      throw failed(fmt::format("failed or timed out after {} s", timeout_.count() / 1000.0), exception_text(e));
    }
    if (!ok) throw failed("did not complete", "");
    work_.reset();
  }
  if (finish_) {
    auto f = std::move(finish_);
    finish_ = nullptr;
    f();
  }
}

Communicator::Communicator(const compat::StorePtr& store, const CommOptions& o)
    : Communicator(store, o, std::make_shared<Counters>()) {}

Communicator::Communicator(const compat::StorePtr& store, const CommOptions& o,
                           std::shared_ptr<Counters> sink)
    : opt_(o), store_(store), sink_(std::move(sink)) {
  if (o.world < 1 || o.rank < 0 || o.rank >= o.world) {
    throw UsageError(fmt::format("rank {} is outside a world of {}", o.rank, o.world),
                     "RANK must be in [0, WORLD_SIZE)");
  }
  // The join (Gloo's full-mesh connect) waits on the store: bound it by the same timeout.
  store->setTimeout(o.timeout);
  c10d_ = std::make_unique<C10dTransport>(
      o.backend == BackendKind::Nccl ? compat::make_nccl(store, o.rank, o.world, o.timeout)
                                     : compat::make_gloo(store, o.rank, o.world, o.timeout, o.hostname, o.interfaces),
      o.world, o.timeout);
  if (o.shared_memory && o.world > 1 && o.backend == BackendKind::Gloo) join_shared_memory();
}

// The ranks agree on one segment through the store: rank 0 publishes its name, each rank adds
// whether it mapped it, and the last to add releases the others.
void Communicator::join_shared_memory() {
  auto bytes = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  ShmRendezvous r;
  r.publish = [&](const std::string& name) { store_->set("mtrain/shm/name", bytes(name)); };
  r.lookup = [&] {
    const auto v = store_->get("mtrain/shm/name");
    return std::string(v.begin(), v.end());
  };
  r.count_ok = [&](bool ok) {
    store_->add("mtrain/shm/ok", ok ? 1 : 0);
    if (store_->add("mtrain/shm/arrived", 1) == opt_.world) store_->set("mtrain/shm/all", bytes("1"));
    store_->wait({"mtrain/shm/all"});
    return static_cast<int>(store_->add("mtrain/shm/ok", 0));
  };
  ShmOptions so;
  so.rank = opt_.rank;
  so.world = opt_.world;
  so.timeout = opt_.timeout;
  so.chunk_floats = opt_.shm_chunk_floats;
  if (auto shm = ShmCollectives::join(so, r, &shm_fallback_))
    shm_ = std::make_unique<ShmTransport>(std::move(shm), opt_.world);
}

std::unique_ptr<Communicator> Communicator::subgroup(const std::string& tag,
                                                    const std::vector<int>& ranks) {
  CommOptions o = opt_;
  o.rank = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == opt_.rank) o.rank = static_cast<int>(i);
  }
  if (o.rank < 0) {
    throw RuntimeFailure(fmt::format("rank {} asked to join sub-group '{}' it is not a member of", opt_.rank, tag));
  }
  o.world = static_cast<int>(ranks.size());
  auto store = compat::make_prefix_store("subgroup/" + tag + "/", store_);
  std::unique_ptr<Communicator> sub(new Communicator(store, o, sink_));
  for (int r : ranks) sub->members_.push_back(members_.empty() ? r : members_.at(static_cast<size_t>(r)));
  return sub;
}

void Communicator::count(const std::string& name, double payload, double wire_factor) {
  std::lock_guard<std::mutex> lock(sink_->mu);
  auto& c = sink_->c[name];
  c.calls += 1;
  c.payload_bytes += payload;
  c.wire_bytes += payload * wire_factor;
}

CommCounters Communicator::counters() const {
  std::lock_guard<std::mutex> lock(sink_->mu);
  return sink_->c;
}

void Communicator::reset_counters() {
  std::lock_guard<std::mutex> lock(sink_->mu);
  sink_->c.clear();
}

std::function<std::string()> Communicator::absent_probe(uint64_t seq) const {
  // Long enough for the peers waiting in the same collective to time out too (they entered it
  // about when this rank did), short next to the timeout that already passed.
  const auto grace = std::clamp(opt_.timeout / 2, std::chrono::milliseconds(1000), std::chrono::milliseconds(5000));
  return
      [store = store_, rank = opt_.rank, world = opt_.world, members = members_, seq, grace, stopping = opt_.stopping] {
        return describe_absent_ranks(find_absent_ranks(store, rank, world, seq, grace, stopping), members, grace);
      };
}

Transport& Communicator::via(const at::Tensor& a, const at::Tensor& b) {
  if (shm_ && shm_->takes(a) && shm_->takes(b)) return *shm_;
  return *c10d_;
}

CommHandle Communicator::issue(Pending p, const std::string& what) {
  CommHandle h;
  h.absent_ = absent_probe(++seq_);
  h.timeout_ = opt_.timeout;
  h.what_ = *p.via ? fmt::format("{} ({})", what, p.via) : what;
  h.work_ = std::move(p.work);
  h.local_ = std::move(p.local);
  h.finish_ = std::move(p.finish);
  return h;
}

CommHandle Communicator::all_reduce(at::Tensor t, const std::string& counter) {
  check_flat(t, "all_reduce");
  const double n = opt_.world;
  count(counter, bytes_of(t), 2.0 * (n - 1) / n);
  if (opt_.world == 1) return {};
  const std::string what = fmt::format("all_reduce of {} bytes", bytes_of(t));
  return issue(via(t, t).all_reduce(std::move(t)), what);
}

CommHandle Communicator::reduce_scatter(at::Tensor input, at::Tensor output) {
  check_flat(input, "reduce_scatter");
  check_flat(output, "reduce_scatter");
  const int64_t k = output.numel();
  if (input.numel() != k * opt_.world) {
    throw RuntimeFailure(
        fmt::format("reduce_scatter: input has {} elements, expected world {} x {}", input.numel(), opt_.world, k));
  }
  const double n = opt_.world;
  count("reduce_scatter", bytes_of(input), (n - 1) / n);
  if (opt_.world == 1) {
    output.copy_(input);
    return {};
  }
  const std::string what = fmt::format("reduce_scatter of {} bytes", bytes_of(input));
  return issue(via(input, output).reduce_scatter(input, output), what);
}

CommHandle Communicator::reduce_scatter_pieces(std::vector<at::Tensor> pieces, const std::vector<int64_t>& offsets,
                                               at::Tensor output) {
  check_flat(output, "reduce_scatter");
  if (!shm_) throw RuntimeFailure("reduce_scatter_pieces: needs the shared-memory transport");
  const int64_t k = output.numel();
  const double n = opt_.world;
  const double payload = static_cast<double>(k) * opt_.world * sizeof(float);
  const size_t count_pieces = pieces.size();
  Pending p = shm_->reduce_scatter_pieces(std::move(pieces), offsets, std::move(output));
  count("reduce_scatter", payload, (n - 1) / n);
  return issue(std::move(p), fmt::format("reduce_scatter of {} bytes ({} pieces)", payload, count_pieces));
}

CommHandle Communicator::all_gather(at::Tensor input, at::Tensor output) {
  check_flat(input, "all_gather");
  check_flat(output, "all_gather");
  const int64_t k = input.numel();
  if (output.numel() != k * opt_.world) {
    throw RuntimeFailure(
        fmt::format("all_gather: output has {} elements, expected world {} x {}", output.numel(), opt_.world, k));
  }
  const double n = opt_.world;
  count("all_gather", bytes_of(output), (n - 1) / n);
  if (opt_.world == 1) {
    output.copy_(input);
    return {};
  }
  const std::string what = fmt::format("all_gather of {} bytes", bytes_of(output));
  return issue(via(input, output).all_gather(input, output), what);
}

CommHandle Communicator::broadcast(at::Tensor t, int root) {
  check_flat(t, "broadcast");
  const double n = opt_.world;
  count("broadcast", bytes_of(t), (n - 1) / n);
  if (opt_.world == 1) return {};
  const std::string what = fmt::format("broadcast of {} bytes", bytes_of(t));
  return issue(c10d_->broadcast(std::move(t), root), what);
}

void Communicator::barrier() {
  if (opt_.world == 1) return;
  issue(c10d_->barrier(), "barrier").wait();
}

}  // namespace mtrain::trainer
