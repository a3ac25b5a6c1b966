// Save protocol (collective):
//   1. rank 0 creates root/.tmp_step_<N> (removing a stale one); barrier
//   2. every rank writes shard_rank<r>.pt and shard_rank<r>.json (its piece table); barrier
//   3. rank 0 merges the piece tables into manifest.json, writes COMPLETE, renames the folder
//      to step_<N> and prunes to `keep` newest; barrier
#include "mtrain/trainer/checkpoint/checkpointer.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/trainer/checkpoint/shard_io.hpp"
#include "mtrain/trainer/comm/communicator.hpp"

namespace mtrain::trainer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void write_text(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".part";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) throw Error(fmt::format("{}: cannot write", tmp.string()), "", kExitFailure);
  }
  fs::rename(tmp, p);
}

std::string shard_file(int rank) { return fmt::format("shard_rank{}.pt", rank); }

}  // namespace

std::string save_checkpoint(Communicator& comm, const SaveRequest& r) {
  const fs::path root(r.root);
  const fs::path tmp = root / fmt::format(".tmp_step_{}", r.step);
  const fs::path final_dir = root / fmt::format("step_{}", r.step);
  if (comm.rank() == 0) {
    fs::create_directories(root);
    fs::remove_all(tmp);
    fs::create_directories(tmp);
  }
  comm.barrier();

  std::vector<std::pair<std::string, at::Tensor>> tensors;
  json table = json::array();
  for (const auto& p : r.pieces) {
    tensors.emplace_back(p.name, p.data);
    table.push_back({{"name", p.name},
                     {"shape", p.global_shape},
                     {"dtype", dtype_name(p.dtype)},
                     {"offset", p.offset},
                     {"numel", p.data.numel()}});
  }
  for (const auto& e : r.extra) tensors.push_back(e);
  write_tensor_dict((tmp / shard_file(comm.rank())).string(), tensors);
  write_text(tmp / fmt::format("shard_rank{}.json", comm.rank()), table.dump());
  comm.barrier();

  if (comm.rank() == 0) {
    Manifest m;
    m.strategy = r.strategy;
    m.world_size = comm.world();
    m.step = r.step;
    m.state = r.state;
    for (int q = 0; q < comm.world(); ++q) {
      const fs::path idx = tmp / fmt::format("shard_rank{}.json", q);
      std::ifstream in(idx);
      const json t = json::parse(in);
      for (const auto& e : t) {
        auto& meta = m.tensors[e.at("name").get<std::string>()];
        meta.shape = e.at("shape").get<std::vector<int64_t>>();
        meta.dtype = e.at("dtype").get<std::string>();
        meta.pieces.push_back({q, shard_file(q), e.at("offset").get<int64_t>(),
                               e.at("numel").get<int64_t>()});
      }
      fs::remove(idx);
    }
    write_text(tmp / "manifest.json", to_json(m).dump(1));
    write_text(tmp / "COMPLETE", fmt::format("step {}\n", r.step));
    fs::remove_all(final_dir);
    fs::rename(tmp, final_dir);
    auto all = complete_checkpoints(r.root);
    for (size_t i = 0; i + static_cast<size_t>(r.keep) < all.size(); ++i) {
      fs::remove_all(all[i].second);
    }
  }
  comm.barrier();
  return final_dir.string();
}

std::vector<std::pair<int64_t, std::string>> complete_checkpoints(const std::string& root) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step_", 0) != 0 || !fs::exists(e.path() / "COMPLETE")) continue;
    try {
      out.emplace_back(std::stoll(name.substr(5)), e.path().string());
    } catch (const std::exception&) {
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> resolve_resume(const std::string& spec, const std::string& root) {
  if (spec.empty()) return std::nullopt;
  if (spec == "auto") {
    auto all = complete_checkpoints(root);
    if (all.empty()) return std::nullopt;
    return all.back().second;
  }
  if (!fs::is_directory(spec)) {
    throw Error(fmt::format("checkpoint.resume: '{}' is not a folder", spec),
                "pass a checkpoint folder such as <work_dir>/checkpoints/step_100, or 'auto'");
  }
  if (!fs::exists(fs::path(spec) / "COMPLETE")) {
    throw Error(fmt::format("{}: the checkpoint has no COMPLETE marker, so it may be partial",
                            (fs::path(spec) / "COMPLETE").string()),
                "resume from a complete checkpoint (or 'auto' to pick the newest complete one)");
  }
  return spec;
}

CheckpointReader::CheckpointReader(std::string dir) : dir_(std::move(dir)) {
  manifest_ = read_manifest(dir_);
}

bool CheckpointReader::has(const std::string& name) const {
  return manifest_.tensors.count(name) > 0;
}

std::vector<int64_t> CheckpointReader::shape(const std::string& name) const {
  return manifest_.tensors.at(name).shape;
}

const std::map<std::string, at::Tensor>& CheckpointReader::shard(const std::string& file) const {
  auto it = shards_.find(file);
  if (it != shards_.end()) return it->second;
  std::map<std::string, at::Tensor> m;
  for (auto& [k, v] : read_tensor_dict(dir_ + "/" + file)) m[k] = v;
  return shards_[file] = std::move(m);
}

at::Tensor CheckpointReader::read(const std::string& name, int64_t offset, int64_t numel) const {
  const auto& meta = manifest_.tensors.at(name);
  at::Tensor out = at::empty({numel}, at::TensorOptions().dtype(dtype_from_name(meta.dtype)));
  int64_t covered = 0;
  for (const auto& p : meta.pieces) {
    const int64_t b = std::max(offset, p.offset), e = std::min(offset + numel, p.offset + p.numel);
    if (e <= b) continue;
    const auto& s = shard(p.file);
    auto it = s.find(name);
    if (it == s.end() || it->second.numel() != p.numel) {
      throw Error(fmt::format("{}/{}: tensor '{}' is missing or has the wrong size", dir_, p.file,
                              name),
                  "the checkpoint is damaged; resume from another one");
    }
    out.narrow(0, b - offset, e - b).copy_(it->second.reshape({-1}).narrow(0, b - p.offset, e - b));
    covered += e - b;
  }
  if (covered != numel) {
    throw Error(fmt::format("{}/manifest.json: the pieces of '{}' do not cover elements [{}, {})",
                            dir_, name, offset, offset + numel),
                "the checkpoint is damaged; resume from another one");
  }
  return out;
}

std::optional<at::Tensor> CheckpointReader::extra(int rank, const std::string& name) const {
  if (rank >= manifest_.world_size) return std::nullopt;
  const auto& s = shard(shard_file(rank));
  auto it = s.find(name);
  if (it == s.end()) return std::nullopt;
  return it->second;
}

}  // namespace mtrain::trainer
