#pragma once
// Can this mtrain-worker run the user's TorchScript model? Decided before any rank starts, from
// the archive's own records (core/torchscript_archive.hpp: read, never executed) and the worker's
// build facts (core/worker_facts.hpp), so that a model scripted by a newer PyTorch than the
// worker's LibTorch is one paragraph and exit 2 — not a rank dying in torch::jit::load.
#include <optional>
#include <string>
#include <unordered_set>

#include "mtrain/config/registry.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/core/torchscript_archive.hpp"
#include "mtrain/core/worker_facts.hpp"

namespace mtrain::launch {

// Pure: the refusal for `archive` (read from `model_path`) on a worker with `facts` and
// `operators`, or nullopt when nothing stands in the way. An empty operator list (facts written
// by an older build) checks the file format only.
std::optional<Error> torchscript_incompatibility(const std::string& model_path, const TorchScriptArchive& archive,
                                                 const WorkerFacts& facts,
                                                 const std::unordered_set<std::string>& operators);

// Effects at the edge: reads the archive, refuses code that reaches outside the model unless
// `trust_code` (core/torchscript_trust.hpp), then checks it against the facts beside
// `worker_path` (skipped when the worker has none: built before they were recorded).
void check_torchscript_model(const std::string& model_path, const std::string& worker_path, bool trust_code);

// The bundled trainer's model file, before any rank starts on this host: for model.name
// torchscript, check_torchscript_model. (The data files are checked with every other problem of
// the job by config::check_before_launch, from data_checks.cpp's table.)
void check_trainer_files(const config::json& job, const std::string& worker_path);

}  // namespace mtrain::launch
