#pragma once
// May and can this mtrain-worker run the user's TorchScript model? Decided before any rank starts:
// the launcher reads the archive (core/torchscript_archive.hpp: the zip's checks, never executed)
// and asks the worker itself (`mtrain-worker model-check FILE`), whose LibTorch parses the code
// with TorchScript's own parser and knows its own operators — the launcher links no LibTorch, and
// only the consumer's parser says what the consumer will run (issue 40 item 1). So code beyond the
// allowlist is refused unless model.trust_code, and a model scripted by a newer PyTorch than the
// worker's LibTorch is one paragraph and exit 2 — not a rank dying in torch::jit::load.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/config/registry.hpp"
#include "lib/core/error.hpp"
#include "lib/core/torchscript_archive.hpp"
#include "lib/core/torchscript_trust.hpp"
#include "lib/core/worker_facts.hpp"
#include "lib/config/job_view.hpp"

namespace mtrain::launch {

// What `mtrain-worker model-check` answered (trainer/model/model_check_command.hpp).
struct WorkerModelCheck {
  std::vector<OperatorUse> unknown;     // operators the worker's LibTorch does not have
  std::vector<TrustFinding> findings;   // code beyond the allowlist
  // Its submodule classes ("Block (x2)" as {"Block", 2}), listed when the worker loaded it (no
  // findings): what fsdp.wrap_module_types can name.
  std::vector<std::pair<std::string, int>> classes;
  // The same two lists for model.eval_path, when it was given (`--eval`).
  std::vector<OperatorUse> eval_unknown;
  std::vector<TrustFinding> eval_findings;
};

// Parses the worker's answer; throws mtrain::Error naming the worker when it is not that JSON.
WorkerModelCheck parse_worker_model_check(const std::string& worker_path, const std::string& json_text);

// Pure: the refusal for `archive` (read from `model_path`) on a worker with `facts` that lacks the
// `unknown` operators, or nullopt when nothing stands in the way.
std::optional<Error> torchscript_incompatibility(const std::string& model_path, const TorchScriptArchive& archive,
                                                 const WorkerFacts& facts, const std::vector<OperatorUse>& unknown);

// Parsing a model's code takes the worker well under a second; loading LibTorch a few on a busy
// node. Past this the launch stops with the worker's own words rather than waiting.
inline constexpr int kModelCheckDeadlineSeconds = 120;

// Effects at the edge: reads the archive (and `eval_path`'s, model.eval_path, when not empty),
// runs `worker_path model-check` on it (a deadline of kModelCheckDeadlineSeconds), refuses code
// beyond the allowlist unless `trust_code`, then operators and a file format the worker lacks, in
// either file. The worker itself refuses a trace that would act wrongly in one phase: one that
// froze a layer's training/evaluation mode without its eval-mode pair, or a pair that does not
// match (trainer/model/trace_pair.hpp). Without a worker (empty path) only the archives are read:
// the worker makes the same checks before it loads the files.
void check_torchscript_model(const std::string& model_path, const std::string& worker_path, bool trust_code,
                             const std::string& eval_path = "");

// The submodule classes of the TorchScript model at `model_path`, as the worker at `worker_path`
// lists them (`mtrain-worker model-check`, which loads the model only when its code is within the
// allowlist): "Block (x2)", "Linear", … for `mtrain config init` to offer as
// fsdp.wrap_module_types. Throws mtrain::Error when the worker refuses the file.
std::vector<std::string> torchscript_module_classes(const std::string& model_path, const std::string& worker_path);

// model.name compiled, before any rank starts: the package's manifest (every program present),
// the PyTorch release and device type it was compiled for against the worker's facts
// (core/compiled_manifest.hpp; the device type where the worker has no CUDA), then `worker_path model-check --compiled
// [--init FILE] DIR`: that the worker runs compiled programs at all (LibTorch 2.x) and that model.init matches the
// tensor table. model.trust_code is config's cross check. Without a worker (empty path) the manifest alone.
void check_compiled_model(const config::JobView& job, const std::string& worker_path);

// The bundled trainer's model file, before any rank starts on this host: for model.name
// torchscript, check_torchscript_model; for compiled, check_compiled_model. (The data files are checked with every
// other problem of the job by config::check_before_launch, from data_checks.cpp's table.)
void check_trainer_files(const config::json& job, const std::string& worker_path);

}  // namespace mtrain::launch
