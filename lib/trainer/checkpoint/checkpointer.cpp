// Save protocol (collective; every "vote" is an all-reduce of failure counts, so one rank's
// failure reaches all ranks instead of leaving them in a barrier):
//   1. rank 0 creates root/.tmp_step_<N> (removing a stale one); vote
//   2. every rank writes shard_rank<r>.pt (CRC-32C while writing, fsync, rename, fsync folder)
//      and shard_rank<r>.json (its piece table, record keys, size, checksum); vote
//   3. rank 0 merges the tables into manifest.json (fsynced), renames the folder to step_<N>,
//      fsyncs root, writes COMPLETE (fsynced) and prunes to the `keep` newest that verify; vote
// A failed vote removes .tmp_step_<N>; older checkpoints are never touched before the new one
// is complete. Pruning renames a folder to .del_step_<K> (atomic, so a crash never leaves a
// half-deleted folder that still has COMPLETE) before deleting it, and only after checking the
// new checkpoint's files on disk: the only valid checkpoint is never deleted.
#include "lib/trainer/checkpoint/checkpointer.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/error_file.hpp"
#include "lib/core/crc32c.hpp"
#include "lib/trainer/checkpoint/durable_file.hpp"
#include "lib/trainer/checkpoint/shard_io.hpp"
#include "lib/trainer/checkpoint/tensor_archive.hpp"
#include "lib/trainer/checkpoint/verify.hpp"
#include "lib/trainer/comm/communicator.hpp"

namespace mtrain::trainer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string shard_file(int rank) { return fmt::format("shard_rank{}.pt", rank); }

// NCCL exists only in CUDA builds, so this branch is never taken in a CPU one.
at::Tensor on_comm_device(Communicator& comm, at::Tensor t) {
  return comm.backend() == BackendKind::Nccl ? t.to(at::kCUDA) : t;
}

// Number of ranks that pass failed = true. Control traffic: counted apart from training's.
int vote(Communicator& comm, bool failed) {
  // This rank's own fault happened now; its peers fail only once the vote is in, so its error
  // file stays the earliest (lib/core/error_file.hpp: the launcher blames the earliest).
  if (failed) note_own_failure();
  at::Tensor t = on_comm_device(comm, at::full({1}, failed ? 1.0 : 0.0, at::kDouble));
  comm.all_reduce(t, "all_reduce(control)").wait();
  return static_cast<int>(t.item<double>() + 0.5);
}

// Every rank's text (at most ~2 KiB each), in rank order.
std::vector<std::string> gather_text(Communicator& comm, const std::string& s) {
  constexpr int64_t kLen = 2048;
  at::Tensor mine = at::zeros({kLen}, at::kByte);
  std::memcpy(mine.data_ptr(), s.data(), std::min<size_t>(s.size(), kLen - 1));
  at::Tensor all = at::empty({kLen * comm.world()}, at::kByte);
  mine = on_comm_device(comm, mine);
  all = on_comm_device(comm, all);
  comm.all_gather(mine, all).wait();
  all = all.cpu();
  std::vector<std::string> out;
  for (int r = 0; r < comm.world(); ++r) {
    out.emplace_back(static_cast<const char*>(all.data_ptr()) + r * kLen);
  }
  return out;
}

// A rank's failure: the message travels in the vote's outcome, the hint ends the paragraph.
struct Failure {
  std::string message, hint;
  bool empty() const { return message.empty(); }
};

Failure failure_of(const std::exception& e) {
  if (auto* me = dynamic_cast<const Error*>(&e)) return {me->message(), me->hint()};
  return {e.what(), ""};
}

// After a vote with failures: rank 0 removes the partial folder; every rank throws.
[[noreturn]] void abandon(Communicator& comm, const SaveRequest& r, const fs::path& tmp,
                          const Failure& mine, int failures) {
  if (comm.rank() == 0) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
  }
  const std::string tail = fmt::format(
      "checkpoint step_{} was not saved; the partial folder {} was removed and the previous "
      "checkpoints under {} are kept", r.step, tmp.string(), r.root);
  if (!mine.empty()) throw RuntimeFailure(mine.message + "; " + tail, mine.hint);
  throw RuntimeFailure(fmt::format("{} of {} rank(s) could not write their part (their errors are printed "
                                   "by those ranks): {}",
                                   failures, comm.world(), tail),
                       "");
}

json write_shard(Communicator& comm, const SaveRequest& r, const fs::path& tmp) {
  std::vector<ArchiveEntry> entries;
  for (const auto& p : r.pieces) {
    at::Tensor d = p.data.detach().reshape({-1});
    const at::ScalarType dt = p.dtype;
    entries.push_back({p.name, dt, {d.numel()}, [d, dt] { return d.scalar_type() == dt ? d : d.to(dt); }});
  }
  for (const auto& [name, t] : r.extra) {
    at::Tensor d = t.detach();
    entries.push_back({name, d.scalar_type(), d.sizes().vec(), [d] { return d; }});
  }
  DurableWriter out((tmp / shard_file(comm.rank())).string());
  if (r.progress) out.on_progress(r.progress);
  const ArchiveWritten w = write_tensor_archive(out, entries);
  out.commit();
  json pieces = json::array();
  for (size_t i = 0; i < r.pieces.size(); ++i) {
    const auto& p = r.pieces[i];
    pieces.push_back({{"name", p.name}, {"shape", p.global_shape}, {"dtype", dtype_name(p.dtype)},
                      {"offset", p.offset}, {"numel", p.data.numel()}, {"key", w.keys[i]}});
  }
  json extras = json::object();
  for (size_t i = 0; i < r.extra.size(); ++i) {
    const at::Tensor& t = r.extra[i].second;
    extras[r.extra[i].first] = {{"key", w.keys[r.pieces.size() + i]},
                                {"dtype", dtype_name(t.scalar_type())},
                                {"shape", t.sizes().vec()}};
  }
  return {{"pieces", pieces},
          {"file", {{"rank", comm.rank()}, {"bytes", w.bytes}, {"checksum", crc32c_text(w.crc32c)},
                    {"extras", extras}}}};
}

Manifest merge_tables(const SaveRequest& r, int world, const fs::path& tmp) {
  Manifest m;
  m.strategy = r.strategy;
  m.world_size = world;
  m.step = r.step;
  m.state = r.state;
  for (int q = 0; q < world; ++q) {
    const fs::path idx = tmp / fmt::format("shard_rank{}.json", q);
    std::ifstream in(idx);
    const json t = json::parse(in);
    for (const auto& e : t.at("pieces")) {
      const std::string name = e.at("name").get<std::string>();
      if (!m.tensors.count(name)) m.order.push_back(name);
      auto& meta = m.tensors[name];
      meta.shape = e.at("shape").get<std::vector<int64_t>>();
      meta.dtype = e.at("dtype").get<std::string>();
      meta.pieces.push_back({q, shard_file(q), e.at("offset").get<int64_t>(),
                             e.at("numel").get<int64_t>(), e.at("key").get<std::string>()});
    }
    const json& f = t.at("file");
    FileMeta fm;
    fm.rank = q;
    fm.bytes = f.at("bytes").get<uint64_t>();
    fm.checksum = f.at("checksum").get<std::string>();
    for (const auto& [en, x] : f.at("extras").items()) {
      fm.extras[en] = {x.at("key").get<std::string>(), x.at("dtype").get<std::string>(),
                       x.at("shape").get<std::vector<int64_t>>()};
    }
    m.files[shard_file(q)] = std::move(fm);
  }
  return m;
}

std::string token_suffix(const SaveRequest& r) { return r.run_token.empty() ? "" : "." + r.run_token; }

void prune(const SaveRequest& r, const std::string& newest) {
  // The new checkpoint must be whole on disk (sizes against its manifest) before anything older
  // goes; if it is not, nothing is deleted.
  VerifyOptions vo;
  vo.checksums = false;
  if (!verify_checkpoint(newest, vo).ok()) return;
  std::vector<RotationEntry> all;
  for (const auto& [step, dir] : complete_checkpoints(r.root))
    all.push_back({step, dir, dir == newest || verify_checkpoint(dir, vo).ok()});
  const fs::path root(r.root);
  for (const auto& victim : rotation_victims(all, r.keep)) {
    if (victim.dir == newest) continue;
    const fs::path trash = root / (fmt::format(".del_step_{}", victim.step) + token_suffix(r));
    std::error_code ec;
    fs::remove_all(trash, ec);
    fs::rename(victim.dir, trash, ec);
    if (!ec) fs::remove_all(trash, ec);
  }
}

}  // namespace

std::string save_checkpoint(Communicator& comm, const SaveRequest& r) {
  const fs::path root(r.root);
  const fs::path tmp = root / (fmt::format(".tmp_step_{}", r.step) + token_suffix(r));
  const fs::path final_dir = root / fmt::format("step_{}", r.step);
  Failure err;
  if (comm.rank() == 0) {
    try {
      fs::create_directories(root);
      // Only this run's own leftover of this step (another job's folders are never touched;
      // dead runs' leftovers go at startup, remove_abandoned_saves).
      fs::remove_all(tmp);
      fs::create_directories(tmp);
    } catch (const fs::filesystem_error& e) {
      err = {fmt::format("{}: cannot create the checkpoint folder ({})", tmp.string(),
                         e.code().message()),
             "check that train.work_dir is writable"};
    }
  }
  if (int n = vote(comm, !err.empty())) abandon(comm, r, tmp, err, n);

  try {
    const json table = write_shard(comm, r, tmp);
    write_file_durably((tmp / fmt::format("shard_rank{}.json", comm.rank())).string(), table.dump());
  } catch (const std::exception& e) {
    err = failure_of(e);
  }
  if (int n = vote(comm, !err.empty())) abandon(comm, r, tmp, err, n);

  if (comm.rank() == 0) {
    try {
      const Manifest m = merge_tables(r, comm.world(), tmp);
      write_file_durably((tmp / "manifest.json").string(), to_json(m).dump(1));
      for (int q = 0; q < comm.world(); ++q) fs::remove(tmp / fmt::format("shard_rank{}.json", q));
      fs::remove_all(final_dir);
      fs::rename(tmp, final_dir);
      fsync_dir(root.string());
      write_file_durably((final_dir / "COMPLETE").string(), fmt::format("step {}\n", r.step));
    } catch (const std::exception& e) {
      err = failure_of(e);
      std::error_code ec;
      fs::remove_all(final_dir / "COMPLETE", ec);
      fs::rename(final_dir, tmp, ec);
    }
    if (err.empty()) prune(r, final_dir.string());
  }
  if (int n = vote(comm, !err.empty())) abandon(comm, r, tmp, err, n);
  return final_dir.string();
}

void remove_abandoned_saves(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(".tmp_step_", 0) == 0 || n.rfind(".del_step_", 0) == 0) fs::remove_all(e.path(), ec);
  }
}

std::vector<RotationEntry> rotation_victims(const std::vector<RotationEntry>& all, int keep) {
  std::vector<RotationEntry> victims;
  int kept = 0;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {  // newest first
    if (it->ok && kept < std::max(1, keep)) {
      ++kept;
    } else if (it->ok || kept >= std::max(1, keep)) {
      victims.push_back(*it);  // a good one beyond `keep`, or a damaged one older than the kept
    }                          // a damaged one among the kept stays for inspection
  }
  return victims;
}

std::vector<std::pair<int64_t, std::string>> complete_checkpoints(const std::string& root) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step_", 0) != 0 || !fs::exists(e.path() / "COMPLETE")) continue;
    try {
      size_t used = 0;
      const int64_t step = std::stoll(name.substr(5), &used);
      if (used == name.size() - 5) out.emplace_back(step, e.path().string());
    } catch (const std::exception&) {
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

ResumeChoice choose_resume(Communicator& comm, const config::Resume& spec, const std::string& root,
                           const std::function<void()>& progress) {
  ResumeChoice choice;
  if (!spec.given()) return choice;
  const bool automatic = spec.kind == config::Resume::Kind::Auto;
  std::vector<std::string> candidates;
  if (automatic) {
    auto all = complete_checkpoints(root);
    for (auto it = all.rbegin(); it != all.rend(); ++it) candidates.push_back(it->second);
    // Newest folders without COMPLETE are a crash mid-save: say so, they are never loaded.
    std::error_code ec;
    const int64_t newest_complete = all.empty() ? -1 : all.back().first;
    if (fs::is_directory(root, ec)) {
      for (const auto& e : fs::directory_iterator(root, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("step_", 0) == 0 && !fs::exists(e.path() / "COMPLETE")) {
          try {
            if (std::stoll(name.substr(5)) > newest_complete) {
              choice.warnings.push_back(fmt::format(
                  "warning: skipping {}: it has no COMPLETE marker (a save was interrupted)",
                  e.path().string()));
            }
          } catch (const std::exception&) {
          }
        }
      }
    }
  } else {
    if (!fs::is_directory(spec.path)) {
      throw UsageError(fmt::format("checkpoint.resume: '{}' is not a folder", spec.path),
                       "pass a checkpoint folder such as <work_dir>/checkpoints/step_100, or 'auto'");
    }
    candidates.push_back(spec.path);
  }
  for (const auto& dir : candidates) {
    // Each rank checks every world-th file (sizes and checksums), so a checkpoint is read about
    // once in total; the manifest and marker every rank checks itself.
    VerifyOptions vo;
    vo.select = [&comm](size_t i) { return static_cast<int>(i % comm.world()) == comm.rank(); };
    vo.progress = progress;
    const VerifyReport rep = verify_checkpoint(dir, vo);
    const std::string mine = rep.ok() ? "" : rep.problem();
    if (vote(comm, !mine.empty()) == 0) {
      choice.dir = dir;
      return choice;
    }
    std::string problem;
    for (const auto& t : gather_text(comm, mine)) {
      if (!t.empty()) {
        problem = t;
        break;
      }
    }
    if (!automatic) {
      throw UsageError(problem,
                       "the checkpoint is damaged or incomplete; resume from an older one "
                       "(or 'auto', which skips damaged ones) or start afresh");
    }
    choice.warnings.push_back(
        fmt::format("warning: skipping checkpoint {}: {}; falling back to the previous one", dir, problem));
  }
  return choice;
}

CheckpointReader::CheckpointReader(std::string dir) : dir_(std::move(dir)) {
  manifest_ = read_manifest(dir_);
}

CheckpointReader::~CheckpointReader() = default;

bool CheckpointReader::has(const std::string& name) const {
  return manifest_.tensors.count(name) > 0;
}

std::vector<int64_t> CheckpointReader::shape(const std::string& name) const {
  auto it = manifest_.tensors.find(name);
  if (it == manifest_.tensors.end()) {
    throw UsageError(fmt::format("{}/manifest.json: no tensor '{}'", dir_, name),
                     "the checkpoint was written for another model");
  }
  return it->second.shape;
}

void CheckpointReader::release() const {
  legacy_.clear();
  archives_.clear();
}

const std::map<std::string, at::Tensor>& CheckpointReader::legacy_shard(const std::string& file) const {
  auto it = legacy_.find(file);
  if (it != legacy_.end()) return it->second;
  std::map<std::string, at::Tensor> m;
  for (auto& [k, v] : read_tensor_dict(dir_ + "/" + file)) m[k] = v;
  return legacy_[file] = std::move(m);
}

ArchiveReader& CheckpointReader::archive(const std::string& file) const {
  auto it = archives_.find(file);
  if (it != archives_.end()) return *it->second;
  const std::string path = dir_ + "/" + file;
  auto fm = manifest_.files.find(file);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (fm != manifest_.files.end() && !ec && size != fm->second.bytes) {
    throw RuntimeFailure(fmt::format("{}: expected {} bytes, found {} (the shard is {})", path, fm->second.bytes, size,
                                     size < fm->second.bytes ? "truncated" : "damaged"),
                         "resume from another checkpoint ('auto' skips damaged ones)");
  }
  return *(archives_[file] = std::make_unique<ArchiveReader>(path));
}

at::Tensor CheckpointReader::read(const std::string& name, int64_t offset, int64_t numel) const {
  auto found = manifest_.tensors.find(name);
  if (found == manifest_.tensors.end()) {
    throw UsageError(fmt::format("{}/manifest.json: no tensor '{}'", dir_, name),
                     "the checkpoint was written for another model");
  }
  const auto& meta = found->second;
  const at::ScalarType dtype = dtype_from_name(meta.dtype);
  at::Tensor out = at::empty({numel}, at::TensorOptions().dtype(dtype));
  // Covered elements are tracked as a set of disjoint ranges (begin → end): pieces may overlap
  // (replicated strategies save the same range from several ranks), so each element is taken
  // once. Looking up the ranges a piece meets is logarithmic, so 10^5 pieces take well under a
  // second (a list rescanned per piece took 113 s).
  std::map<int64_t, int64_t> done;
  auto uncovered = [&](int64_t b, int64_t e) {
    std::vector<std::pair<int64_t, int64_t>> gaps;
    auto it = done.upper_bound(b);
    if (it != done.begin() && std::prev(it)->second > b) --it;
    int64_t at = b;
    for (; it != done.end() && it->first < e; ++it) {
      if (it->first > at) gaps.emplace_back(at, it->first);
      at = std::max(at, it->second);
    }
    if (at < e) gaps.emplace_back(at, e);
    return gaps;
  };
  auto mark = [&](int64_t b, int64_t e) {
    auto it = done.upper_bound(b);
    if (it != done.begin() && std::prev(it)->second >= b) --it;
    while (it != done.end() && it->first <= e) {
      b = std::min(b, it->first);
      e = std::max(e, it->second);
      it = done.erase(it);
    }
    done.emplace(b, e);
  };
  int64_t covered = 0;
  for (const auto& p : meta.pieces) {
    const int64_t b = std::max(offset, p.offset), e = std::min(offset + numel, p.offset + p.numel);
    if (e <= b) continue;
    for (const auto& [gb, ge] : uncovered(b, e)) {
      at::Tensor part;
      if (p.key.empty()) {
        const auto& s = legacy_shard(p.file);
        auto it = s.find(name);
        if (it == s.end() || it->second.numel() != p.numel) {
          throw RuntimeFailure(fmt::format("{}/{}: tensor '{}' is missing or has the wrong size", dir_, p.file, name),
                               "the checkpoint is damaged; resume from another one");
        }
        part = it->second.reshape({-1}).narrow(0, gb - p.offset, ge - gb);
      } else {
        part = archive(p.file).read(p.key, dtype, gb - p.offset, ge - gb);
      }
      out.narrow(0, gb - offset, ge - gb).copy_(part);
      covered += ge - gb;
      mark(gb, ge);
    }
    if (covered == numel) break;
  }
  if (covered != numel) {
    throw RuntimeFailure(fmt::format("{}/manifest.json: the pieces of '{}' do not cover elements [{}, {})", dir_, name,
                                     offset, offset + numel),
                         "the checkpoint is damaged; resume from another one");
  }
  return out;
}

std::optional<at::Tensor> CheckpointReader::extra(int rank, const std::string& name) const {
  if (rank >= manifest_.world_size) return std::nullopt;
  const std::string file = shard_file(rank);
  auto fm = manifest_.files.find(file);
  if (fm == manifest_.files.end()) {  // format 1
    const auto& s = legacy_shard(file);
    auto it = s.find(name);
    if (it == s.end()) return std::nullopt;
    return it->second;
  }
  auto e = fm->second.extras.find(name);
  if (e == fm->second.extras.end()) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : e->second.shape) n *= d;
  return archive(file).read(e->second.key, dtype_from_name(e->second.dtype), 0, n).view(e->second.shape);
}

}  // namespace mtrain::trainer
