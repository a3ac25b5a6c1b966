#pragma once
// Saving, choosing and reading checkpoints (layout in manifest.hpp). Every function that takes a
// Communicator is collective: all ranks call it, and all ranks reach the same outcome (a failure
// on one rank is voted on, so no rank waits forever on a peer that gave up).
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "lib/trainer/checkpoint/manifest.hpp"
#include "lib/trainer/strategy/strategy.hpp"
#include "lib/config/resume.hpp"

namespace mtrain::trainer {

class Communicator;
class ArchiveReader;

struct SaveRequest {
  std::string root;  // <work_dir>/checkpoints
  int64_t step = 0;
  std::string strategy;
  nlohmann::json state;                                   // trainer state for the manifest
  std::vector<TensorPiece> pieces;                        // this rank's
  std::vector<std::pair<std::string, at::Tensor>> extra;  // rank-local tensors (RNG)
  int keep = 2;                                           // newest complete checkpoints kept
  std::function<void()> progress;                         // during long writes (heartbeat)
  // Names this run's temporary folders (.tmp_step_<N>.<token>, .del_step_<K>.<token>): a save
  // removes only its own. Same on every rank; "" = untagged (tests with one writer).
  std::string run_token;
};
// Writes step_<N>; returns its path. On failure (disk full, …) on any rank: the partial
// .tmp_step_<N> is removed, older checkpoints are untouched, and every rank throws mtrain::Error
// (the failing rank's own paragraph; the others name the failing ranks).
std::string save_checkpoint(Communicator& comm, const SaveRequest& r);

// Removes the .tmp_step_* and .del_step_* folders under root: saves and prunes that a crash
// interrupted. Only for the holder of the work-dir lock (lib/core/work_dir_lock.hpp), at startup: they
// then belong to runs that are dead.
void remove_abandoned_saves(const std::string& root);

// Rotation (checkpoint.keep): which complete checkpoints a save deletes. `keep` counts only
// checkpoints that verify (sizes against their manifest), newest first, so a damaged newer one
// can never push out a good older one (resume auto skips the damaged one and needs that one).
// Deleted: good ones beyond `keep`, and damaged ones older than the oldest kept; a damaged one
// among the kept stays for inspection. `all` oldest first, as complete_checkpoints gives them.
struct RotationEntry {
  int64_t step = 0;
  std::string dir;
  bool ok = false;  // verified
};
std::vector<RotationEntry> rotation_victims(const std::vector<RotationEntry>& all, int keep);

// step_<N> folders under root that have COMPLETE, oldest first (not verified).
std::vector<std::pair<int64_t, std::string>> complete_checkpoints(const std::string& root);

struct ResumeChoice {
  std::optional<std::string> dir;     // none: train from scratch
  std::vector<std::string> warnings;  // checkpoints skipped, and why (same on every rank)
};
// checkpoint.resume: none → none; auto → the newest complete checkpoint under root whose files
// verify (size + CRC-32C, each rank checking a share of the files), skipping bad ones with a
// warning; a path → that folder, which must be complete and verify (else mtrain::Error naming
// the file, expected vs actual). Collective.
ResumeChoice choose_resume(Communicator& comm, const config::Resume& spec, const std::string& root,
                           const std::function<void()>& progress = {});

// A checkpoint readable by global offsets: each read() preads just the bytes of the pieces that
// overlap the range (format 2), so no shard is loaded whole.
class CheckpointReader final : public TensorSource {
 public:
  explicit CheckpointReader(std::string dir);
  ~CheckpointReader() override;
  const Manifest& manifest() const { return manifest_; }
  const std::string& dir() const { return dir_; }
  bool has(const std::string& name) const override;
  std::vector<int64_t> shape(const std::string& name) const override;
  at::Tensor read(const std::string& name, int64_t offset, int64_t numel) const override;
  // A rank-local extra tensor ("rng/cpu") of `rank`, if that rank's shard has one.
  std::optional<at::Tensor> extra(int rank, const std::string& name) const;
  // Drops open files and cached format-1 shards (consolidation calls it between tensors).
  void release() const;

 private:
  const std::map<std::string, at::Tensor>& legacy_shard(const std::string& file) const;
  ArchiveReader& archive(const std::string& file) const;
  std::string dir_;
  Manifest manifest_;
  mutable std::map<std::string, std::map<std::string, at::Tensor>> legacy_;
  mutable std::map<std::string, std::unique_ptr<ArchiveReader>> archives_;
};

}  // namespace mtrain::trainer
