#include "mtrain/trainer/comm/communicator.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/trainer/comm/absent_ranks.hpp"
#include "mtrain/trainer/comm/exception_text.hpp"

namespace mtrain::trainer {

namespace {
double bytes_of(const at::Tensor& t) { return static_cast<double>(t.numel() * t.element_size()); }

// Gloo (1.13) rejects bf16. Moving bytes needs no arithmetic: a bf16 tensor travels
// with the same bits as fp16 (all-gather, broadcast, all-to-all only copy them; Gloo has no
// int16); sums go through an fp32 copy.
bool bits_only(const at::Tensor& t, bool flat_collectives) {
  return !flat_collectives && t.scalar_type() == at::kBFloat16;
}
at::Tensor as_bits(const at::Tensor& t) { return t.view(at::kHalf); }

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
  backend_ = o.backend == BackendKind::Nccl
                 ? compat::make_nccl(store, o.rank, o.world, o.timeout)
                 : compat::make_gloo(store, o.rank, o.world, o.timeout, o.hostname, o.interfaces);
  flat_collectives_ = compat::has_flat_collectives(backend_);
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
  shm_ = ShmCollectives::join(so, r, &shm_fallback_);
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
  return [store = store_, rank = opt_.rank, world = opt_.world, members = members_, seq, grace] {
    return describe_absent_ranks(find_absent_ranks(store, rank, world, seq, grace), members, grace);
  };
}

CommHandle Communicator::handle(compat::WorkPtr w, std::string what, std::function<void()> finish) {
  CommHandle h;
  h.absent_ = absent_probe(++seq_);
  h.work_ = std::move(w);
  h.finish_ = std::move(finish);
  h.timeout_ = opt_.timeout;
  h.what_ = std::move(what);
  return h;
}

bool Communicator::shm_fp32(const at::Tensor& t) const {
  return shm_ && t.scalar_type() == at::kFloat && t.device().is_cpu();
}

CommHandle Communicator::local(std::shared_future<void> f, std::string what) {
  CommHandle h;
  h.absent_ = absent_probe(++seq_);
  h.timeout_ = opt_.timeout;
  h.what_ = std::move(what);
  h.local_ = std::move(f);
  return h;
}

CommHandle Communicator::all_reduce(at::Tensor t, const std::string& counter) {
  check_flat(t, "all_reduce");
  const double n = opt_.world;
  count(counter, bytes_of(t), 2.0 * (n - 1) / n);
  if (opt_.world == 1) return {};
  if (shm_fp32(t)) {
    return local(shm_->all_reduce(t.data_ptr<float>(), t.numel(), std::make_shared<at::Tensor>(t)),
                 fmt::format("all_reduce of {} bytes (shared memory)", bytes_of(t)));
  }
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  opts.timeout = opt_.timeout;
  if (bits_only(t, flat_collectives_)) {
    at::Tensor wide = t.to(at::kFloat);
    std::vector<at::Tensor> ts{wide};
    return handle(backend_->allreduce(ts, opts), fmt::format("all_reduce of {} bytes", bytes_of(t)),
                  [t, wide]() mutable { t.copy_(wide); });
  }
  std::vector<at::Tensor> ts{t};
  return handle(backend_->allreduce(ts, opts), fmt::format("all_reduce of {} bytes", bytes_of(t)));
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
  if (shm_fp32(input) && shm_fp32(output)) {
    return local(shm_->reduce_scatter(input.data_ptr<float>(), output.data_ptr<float>(), k,
                                      std::make_shared<std::pair<at::Tensor, at::Tensor>>(input, output)),
                 what + " (shared memory)");
  }
  if (flat_collectives_) {
    c10d::ReduceScatterOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    opts.timeout = opt_.timeout;
    return handle(backend_->_reduce_scatter_base(output, input, opts), what);
  }
  // Gloo (1.13) has no reduce-scatter: an all-to-all sends chunk r to rank r (the same bytes a
  // ring reduce-scatter puts on the wire), then each rank sums the N chunks it received.
  auto recv = at::empty_like(input);
  std::vector<int64_t> splits;  // empty: equal splits
  c10d::AllToAllOptions opts;
  opts.timeout = opt_.timeout;
  const bool bits = bits_only(input, false);
  at::Tensor send = bits ? as_bits(input) : input;
  at::Tensor into = bits ? as_bits(recv) : recv;
  auto w = backend_->alltoall_base(into, send, splits, splits, opts);
  return handle(std::move(w), what, [recv, output, world = opt_.world, k, bits]() mutable {
    if (bits) {
      output.copy_(recv.view({world, k}).to(at::kFloat).sum(0));
    } else {
      at::sum_out(output, recv.view({world, k}), 0);
    }
  });
}

CommHandle Communicator::reduce_scatter_pieces(std::vector<at::Tensor> pieces, const std::vector<int64_t>& offsets,
                                               at::Tensor output) {
  check_flat(output, "reduce_scatter");
  if (!shm_fp32(output) || pieces.size() != offsets.size()) {
    throw RuntimeFailure(
        "reduce_scatter_pieces: needs the shared-memory path, an fp32 CPU output and one offset per piece");
  }
  const int64_t k = output.numel();
  std::vector<ShmCollectives::Piece> in;
  in.reserve(pieces.size());
  int64_t end = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const at::Tensor& t = pieces[i];
    if (!shm_fp32(t) || !t.is_contiguous() || offsets[i] < end || offsets[i] + t.numel() > k * opt_.world) {
      throw RuntimeFailure(
          fmt::format("reduce_scatter_pieces: piece {} ({} elements at {}) is not an fp32 CPU contiguous "
                      "tensor inside [{}, {}) after the piece before",
                      i, t.numel(), offsets[i], end, k * opt_.world));
    }
    in.push_back({offsets[i], t.data_ptr<float>(), t.numel()});
    end = offsets[i] + t.numel();
  }
  const double n = opt_.world;
  const double payload = static_cast<double>(k) * opt_.world * sizeof(float);
  count("reduce_scatter", payload, (n - 1) / n);
  const std::string what = fmt::format("reduce_scatter of {} bytes (shared memory, {} pieces)", payload, pieces.size());
  return local(shm_->reduce_scatter_pieces(std::move(in), output.data_ptr<float>(), k,
                                           std::make_shared<std::pair<std::vector<at::Tensor>, at::Tensor>>(
                                               std::move(pieces), output)),
               what);
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
  if (shm_fp32(input) && shm_fp32(output)) {
    return local(shm_->all_gather(input.data_ptr<float>(), output.data_ptr<float>(), k,
                                  std::make_shared<std::pair<at::Tensor, at::Tensor>>(input, output)),
                 what + " (shared memory)");
  }
  c10d::AllgatherOptions opts;
  opts.timeout = opt_.timeout;
  if (flat_collectives_) {
    return handle(backend_->_allgather_base(output, input, opts), what);
  }
  // Gloo copies its result into the output list; views of the flat output make that the
  // final placement, with no copy of ours.
  const bool bits = bits_only(input, false);
  std::vector<std::vector<at::Tensor>> outs(1);
  for (int r = 0; r < opt_.world; ++r) {
    at::Tensor o = output.narrow(0, r * k, k).view(input.sizes());
    outs[0].push_back(bits ? as_bits(o) : o);
  }
  std::vector<at::Tensor> ins{bits ? as_bits(input) : input};
  return handle(backend_->allgather(outs, ins, opts), what);
}

CommHandle Communicator::broadcast(at::Tensor t, int root) {
  check_flat(t, "broadcast");
  const double n = opt_.world;
  count("broadcast", bytes_of(t), (n - 1) / n);
  if (opt_.world == 1) return {};
  std::vector<at::Tensor> ts{bits_only(t, flat_collectives_) ? as_bits(t) : t};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  opts.rootTensor = 0;
  opts.timeout = opt_.timeout;
  return handle(backend_->broadcast(ts, opts), fmt::format("broadcast of {} bytes", bytes_of(t)));
}

void Communicator::barrier() {
  if (opt_.world == 1) return;
  c10d::BarrierOptions opts;
  opts.timeout = opt_.timeout;
  handle(backend_->barrier(opts), "barrier").wait();
}

}  // namespace mtrain::trainer
