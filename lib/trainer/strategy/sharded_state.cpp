// The sharded engine's state as the rest of the trainer sees it: the memory ledger, checkpoint
// pieces with global offsets (so any strategy at any world size can read them back), loading
// from any layout, and the consolidated fp32 weights.
//
// Pieces: a parameter occupies [offset, offset+numel) of its unit's flat buffer; rank g of the
// shard group owns [g·k, (g+1)·k) of that buffer, so it saves the intersection, shifted into the
// parameter's own flattened index space. With S > 1 only replica 0 saves (HYBRID_SHARD replicas
// hold identical shards); with S = 1 (NO_SHARD, DDP) every rank holds everything and rank r saves
// the r-th even slice, as ddp.cpp does.
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/trainer/comm/pooled_cpu.hpp"
#include "lib/trainer/strategy/sharded_engine.hpp"
#include "lib/trainer/strategy/source_check.hpp"

namespace mtrain::trainer::detail {

std::pair<int64_t, int64_t> ShardedEngine::own_range(const Unit& u, const Slot& s) const {
  const int64_t b = std::max(s.offset, g_ * u.shard);
  const int64_t e = std::min(s.offset + s.numel, (g_ + 1) * u.shard);
  return {b, std::max(b, e)};
}

std::pair<int64_t, int64_t> ShardedEngine::save_range(const Unit& u, const Slot& s) const {
  if (S_ == 1) {
    auto [b, e] = even_split(s.numel, comm_.world(), comm_.rank());
    return {s.offset + b, s.offset + e};
  }
  if (rep_ != 0) return {0, 0};
  return own_range(u, s);
}

MemoryLedger ShardedEngine::memory() const {
  MemoryLedger m;
  for (const auto& u : units_) {
    const int64_t optim_state = u.shard * u.optim->state_bytes_per_element();
    const int64_t master = u.master.numel() * u.master.element_size();
    if (u.resident) {
      m.params += u.padded * u.full.element_size();
      m.optimizer += optim_state + (u.master_is_view ? 0 : master);
    } else {
      const bool shared = u.pshard.is_same(u.master);
      m.params += u.pshard.numel() * u.pshard.element_size();
      m.optimizer += optim_state + (shared ? 0 : master);
      m.gathered = std::max(m.gathered, u.padded * u.full.element_size());
    }
    const at::Tensor& g = c_.grads_sharded ? u.gacc : u.gfull;
    m.grads += g.numel() * g.element_size();
  }
  m.gathered_peak = gathered_peak_;
  m.unsharded_grads_peak = grad_peak_;
  m.transient_peak = transient_peak_;
  return m;
}

std::vector<TensorPiece> ShardedEngine::state_pieces() {
  release_all();
  std::vector<TensorPiece> out;
  auto add = [&](const std::string& name, const Slot& s, int64_t b, int64_t e, const at::Tensor& flat_shard,
                 int64_t shard_begin) {
    TensorPiece p;
    p.name = name;
    p.global_shape = params_[s.param].sizes().vec();
    p.dtype = at::kFloat;
    p.offset = b - s.offset;
    p.data = flat_shard.narrow(0, b - shard_begin, e - b);
    out.push_back(std::move(p));
  };
  for (auto& u : units_) {
    const int64_t shard_begin = g_ * u.shard;
    auto states = u.optim->state();
    for (const auto& s : u.slots) {
      auto [b, e] = save_range(u, s);
      if (e <= b) continue;
      add("model/" + names_[s.param], s, b, e, u.master, shard_begin);
      for (auto& [sname, st] : states) add("optim/" + sname + "/" + names_[s.param], s, b, e, st, shard_begin);
    }
  }
  if (comm_.rank() == 0) {
    TensorPiece p;
    p.name = "optim/step";
    p.global_shape = {1};
    p.dtype = at::kLong;
    p.data = at::full({1}, optimizer_steps(), at::kLong);
    out.push_back(std::move(p));
    if (scaler_.enabled()) {
      TensorPiece q;
      q.name = "precision/loss_scale";
      q.global_shape = {1};
      q.dtype = at::kFloat;
      q.data = at::full({1}, scaler_.scale(), at::kFloat);
      out.push_back(std::move(q));
    }
  }
  return out;
}

void ShardedEngine::load_state(const TensorSource& src) { load_tensors(src, /*whole_state=*/true); }

void ShardedEngine::load_parameters(const TensorSource& src) {
  load_tensors(src, /*whole_state=*/false);
  // Frozen parameters live outside the units, replicated: read whole.
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < all_params_.size(); ++i) {
    const std::string name = "model/" + all_names_[i];
    if (all_index_[i] >= 0 || !src.has(name)) continue;
    require_source_tensor(src, name, all_params_[i].sizes());
    all_params_[i].copy_(src.read(name, 0, all_params_[i].numel()).view(all_params_[i].sizes()));
  }
}

void ShardedEngine::load_tensors(const TensorSource& src, bool whole_state) {
  at::NoGradGuard no_grad;
  release_all();
  auto check = [&](const std::string& name, const at::Tensor& p) {
    require_source_tensor(src, name, p.sizes());
  };
  for (auto& u : units_) {
    const int64_t shard_begin = g_ * u.shard;
    auto states = u.optim->state();
    for (const auto& s : u.slots) {
      const std::string& pname = names_[s.param];
      if (!whole_state && !src.has("model/" + pname)) continue;  // keeps its initial value
      check("model/" + pname, params_[s.param]);
      auto [b, e] = own_range(u, s);
      if (e > b) {
        u.master.narrow(0, b - shard_begin, e - b).copy_(src.read("model/" + pname, b - s.offset, e - b));
        for (auto& [sname, st] : states) {
          if (!whole_state) break;
          const std::string key = "optim/" + sname + "/" + pname;
          check(key, params_[s.param]);
          st.narrow(0, b - shard_begin, e - b).copy_(src.read(key, b - s.offset, e - b));
        }
      }
      // Resident parameters: the whole tensor straight from the checkpoint (no collective).
      if (u.resident) u.full.narrow(0, s.offset, s.numel).copy_(src.read("model/" + pname, 0, s.numel));
    }
    if (!u.resident && !u.pshard.is_same(u.master)) u.pshard.copy_(u.master);
    if (!whole_state) continue;
    (c_.grads_sharded ? u.gacc : u.gfull).zero_();
    const int64_t steps = src.has("optim/step") ? src.read("optim/step", 0, 1).item<int64_t>() : 0;
    u.optim->set_steps(steps);
  }
  if (whole_state && scaler_.enabled() && src.has("precision/loss_scale")) {
    scaler_.set_scale(src.read("precision/loss_scale", 0, 1).item<double>());
  }
}

// The unit's full flat values (fp32 masters, or 16-bit when asked to save in 16 bits), gathered
// from every shard; collective over the shard group.
at::Tensor ShardedEngine::gather_for_save(Unit& u, at::ScalarType dt) {
  // On the CPU the buffer takes a released block of its size from the block pool, so the export
  // does not add fresh memory on top of the blocks the training kept for reuse.
  at::Tensor flat = pooled_empty(u.padded, at::TensorOptions().dtype(dt).device(device_));
  at::Tensor mine = u.master.to(device_, dt).contiguous();
  if (shard_comm_ != nullptr) {
    shard_comm_->all_gather(mine, flat).wait();
  } else {
    flat.copy_(mine);
  }
  return flat;
}

std::vector<std::pair<std::string, at::Tensor>> ShardedEngine::consolidated_parameters() {
  std::vector<std::pair<std::string, at::Tensor>> out;
  // A snapshot: an exported tensor may be a view of the live parameters (resident units).
  for (auto& e : export_parameters()) out.emplace_back(e.name, e.data().clone());
  return out;
}

std::vector<ParameterExport> ShardedEngine::export_parameters() {
  release_all();
  const bool half = c_.gather_16bit_on_save && prec_.param != at::kFloat;
  const at::ScalarType dt = half ? prec_.param : at::kFloat;
  // One gathered unit at a time, shared by the producers: asking for a parameter of another unit
  // drops the current one first. Every rank asks in the same (named_parameters) order, so the
  // all-gathers match across ranks.
  struct Cursor {
    size_t unit = SIZE_MAX;
    at::Tensor flat;
  };
  auto cursor = std::make_shared<Cursor>();
  std::vector<ParameterExport> out;
  for (size_t i = 0; i < all_params_.size(); ++i) {
    const int k = all_index_[i];
    ParameterExport e;
    e.name = all_names_[i];
    e.shape = all_params_[i].sizes().vec();
    e.dtype = dt;
    if (k < 0) {
      at::Tensor frozen = all_params_[i].detach();
      e.data = [frozen, dt] { return frozen.to(at::kCPU, dt).clone(); };
    } else {
      const size_t p = static_cast<size_t>(k);
      e.data = [this, cursor, p, dt] {
        at::NoGradGuard no_grad;
        const size_t ui = unit_of_param_[p];
        Unit& u = units_[ui];
        const Slot& s = u.slots[slot_of_param_[p]];
        if (u.resident && u.full.scalar_type() == dt) {
          // A resident unit's `full` already holds every shard's updated values in the export
          // dtype (each step all-gathers them into it; a load fills it): read in place, with no
          // gather and no copy. Gathering here took a fresh flat buffer of the whole unit on
          // every rank at the end of the run — +4Ψ over the training peak under ZeRO-2, whose
          // block pool holds no unit-sized block (issue 31). Every rank decides alike, so the
          // remaining units' all-gathers still match.
          return u.full.narrow(0, s.offset, s.numel).view(params_[p].sizes()).to(at::kCPU);
        }
        if (cursor->unit != ui) {
          cursor->flat = at::Tensor();  // drop the previous unit before gathering the next
          cursor->flat = gather_for_save(u, dt);
          cursor->unit = ui;
        }
        return cursor->flat.narrow(0, s.offset, s.numel).view(params_[p].sizes()).to(at::kCPU).clone();
      };
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace mtrain::trainer::detail
