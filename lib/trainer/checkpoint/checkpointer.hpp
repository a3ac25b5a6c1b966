#pragma once
// Saving and finding checkpoints (layout in manifest.hpp). Every function that takes a
// Communicator is collective.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "mtrain/trainer/checkpoint/manifest.hpp"
#include "mtrain/trainer/strategy/strategy.hpp"

namespace mtrain::trainer {

class Communicator;

struct SaveRequest {
  std::string root;  // <work_dir>/checkpoints
  int64_t step = 0;
  std::string strategy;
  nlohmann::json state;                                   // trainer state for the manifest
  std::vector<TensorPiece> pieces;                        // this rank's
  std::vector<std::pair<std::string, at::Tensor>> extra;  // rank-local tensors (RNG)
  int keep = 2;                                           // newest complete checkpoints kept
};
// Writes step_<N>; returns its path.
std::string save_checkpoint(Communicator& comm, const SaveRequest& r);

// step_<N> folders under root that have COMPLETE, oldest first.
std::vector<std::pair<int64_t, std::string>> complete_checkpoints(const std::string& root);
// checkpoint.resume: "" → none; "auto" → the newest complete one under root, or none;
// a path → that folder, which must be complete (else mtrain::Error naming it).
std::optional<std::string> resolve_resume(const std::string& spec, const std::string& root);

// A loaded checkpoint: the manifest plus every shard, readable by global offsets.
class CheckpointReader final : public TensorSource {
 public:
  explicit CheckpointReader(std::string dir);
  const Manifest& manifest() const { return manifest_; }
  bool has(const std::string& name) const override;
  std::vector<int64_t> shape(const std::string& name) const override;
  at::Tensor read(const std::string& name, int64_t offset, int64_t numel) const override;
  // A rank-local extra tensor ("rng/cpu") of `rank`, if that rank's shard has one.
  std::optional<at::Tensor> extra(int rank, const std::string& name) const;

 private:
  const std::map<std::string, at::Tensor>& shard(const std::string& file) const;
  std::string dir_;
  Manifest manifest_;
  mutable std::map<std::string, std::map<std::string, at::Tensor>> shards_;
};

}  // namespace mtrain::trainer
