#include "lib/launch/model_check.hpp"

#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/config/names.hpp"
#include "lib/config/registry.hpp"
#include "lib/core/child_process.hpp"
#include "lib/core/compiled_manifest.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/visible_text.hpp"

namespace mtrain::launch {

WorkerModelCheck parse_worker_model_check(const std::string& worker_path, const std::string& json_text) {
  WorkerModelCheck out;
  try {
    const auto j = nlohmann::json::parse(json_text);
    for (const auto& u : j.at("unknown")) out.unknown.push_back({u.at("name").get<std::string>(), u.at("where").get<std::string>()});
    for (const auto& f : j.at("findings")) out.findings.push_back({f.at("what").get<std::string>(), f.at("where").get<std::string>()});
    if (j.contains("eval")) {
      const auto& e = j.at("eval");
      for (const auto& u : e.at("unknown"))
        out.eval_unknown.push_back({u.at("name").get<std::string>(), u.at("where").get<std::string>()});
      for (const auto& f : e.at("findings"))
        out.eval_findings.push_back({f.at("what").get<std::string>(), f.at("where").get<std::string>()});
    }
    // Absent from a worker older than the list (issue 45): no classes to offer.
    if (j.contains("classes"))
      for (const auto& c : j.at("classes"))
        out.classes.emplace_back(c.at("name").get<std::string>(), c.at("count").get<int>());
  } catch (const nlohmann::json::exception& e) {
    throw RuntimeFailure(
        fmt::format("'{} model-check' answered something other than its JSON ({}): {}", worker_path, e.what(),
                    visible_text(json_text.substr(0, 200))),
        "the mtrain-worker beside this mtrain is from another build; reinstall mtrain (both binaries)");
  }
  return out;
}

std::optional<Error> torchscript_incompatibility(const std::string& model_path, const TorchScriptArchive& archive,
                                                 const WorkerFacts& facts, const std::vector<OperatorUse>& unknown) {
  const bool too_new = facts.file_format_max >= 0 && archive.format_version > facts.file_format_max;
  if (unknown.empty() && !too_new) return std::nullopt;

  std::string why;
  if (!unknown.empty()) {
    why = fmt::format("it calls {} ({}), which this worker's {} does not have", unknown.front().name,
                      unknown.front().where, facts.describe());
    if (unknown.size() > 1) {
      std::vector<std::string> rest;
      for (size_t i = 1; i < unknown.size() && i < 6; ++i) rest.push_back(unknown[i].name);
      why += fmt::format(" ({} unknown operators in all; also {}{})", unknown.size(), str::join(rest, ", "),
                         unknown.size() > 6 ? ", …" : "");
    }
  } else {
    why = fmt::format("its file format {} is newer than the {} this worker's {} reads", archive.format_version,
                      facts.file_format_max, facts.describe());
  }
  const std::string mine = facts.torch_line == "python" ? "the PyTorch you scripted it with"
                                                        : "your PyTorch (2.x)";
  return Error(fmt::format("the TorchScript model '{}' cannot run in this mtrain-worker: it was saved by {}, and {}",
                           model_path, archive.saved_by(), visible_text(why)),
               fmt::format("build mtrain against {}: `{}` (then launch with that tree's mtrain), or script the "
                           "model with PyTorch {}",
                           mine, facts.build_against_python_command(), facts.libtorch))
      .at("model.path");
}

namespace {

// `argv` (`worker_path model-check …`) run to its answer on standard output; the worker's own
// refusal (a file that does not parse, a damaged zip, a package for another PyTorch) is relayed
// as it is, with the worker's exit code.
std::string run_worker_check(const std::vector<std::string>& argv, const std::string& model_path,
                             const std::string& worker_path, const char* what) {
  ChildOptions o;
  o.deadline = std::chrono::seconds(kModelCheckDeadlineSeconds);
  o.max_stdout = 32u << 20;
  const ChildResult r = run_child(argv, o);
  if (!r.started)
    throw RuntimeFailure(
        fmt::format("cannot run '{}' to check the model '{}': {}", worker_path, model_path, r.exec_error),
        "reinstall mtrain (mtrain-worker is installed beside mtrain or in libexec/mtrain)");
  if (r.timed_out)
    throw RuntimeFailure(fmt::format("'{} model-check {}' did not answer within {} s", worker_path, model_path,
                                     kModelCheckDeadlineSeconds),
                         "the machine may be overloaded; try again");
  // The worker's paragraph is its last line that starts "error: " (LibTorch may warn before it).
  std::string said = str::trim(r.err);
  const std::string tag = "error: ";
  if (const size_t at = said.rfind("\n" + tag); at != std::string::npos) said = said.substr(at + 1);
  if (str::starts_with(said, tag)) said = said.substr(tag.size());
  // Exit 2 is the worker's refusal of the model, already one paragraph naming the file and the fix.
  if (r.exit_code == kExitUsage) throw UsageError(visible_text(said));
  if (r.exit_code != 0)
    throw RuntimeFailure(fmt::format("checking the {} '{}' with '{}' failed (exit {}): {}", what, model_path,
                                     worker_path, r.exit_code, visible_text(said)),
                         "")
        .at("model.path");
  return r.out;
}

WorkerModelCheck ask_worker(const std::string& model_path, const std::string& worker_path, bool trust_code,
                            const std::string& eval_path = "") {
  std::vector<std::string> argv = {worker_path, "model-check"};
  if (trust_code) argv.push_back("--trusted");
  if (!eval_path.empty()) argv.insert(argv.end(), {"--eval", eval_path});
  argv.push_back(model_path);
  return parse_worker_model_check(worker_path, run_worker_check(argv, model_path, worker_path, "TorchScript model"));
}

// The device type the ranks train on, as far as the launcher knows it from the worker: a worker
// without CUDA trains on the CPU; a CUDA worker's ranks use the GPUs a node has (launch.device
// is not in the trainer's job), so "" leaves the device to the ranks, which check every program
// argument's device against the package's.
std::string compiled_device(const std::optional<WorkerFacts>& facts) { return facts && !facts->cuda ? "cpu" : ""; }

}  // namespace

void check_torchscript_model(const std::string& model_path, const std::string& worker_path, bool trust_code,
                             const std::string& eval_path) {
  const TorchScriptArchive archive = read_torchscript_archive(model_path);
  std::optional<TorchScriptArchive> eval_archive;
  if (!eval_path.empty()) eval_archive = read_torchscript_archive(eval_path);
  if (worker_path.empty()) return;
  const WorkerModelCheck answer = ask_worker(model_path, worker_path, trust_code, eval_path);
  check_torchscript_trust(model_path, answer.findings, trust_code);
  if (eval_archive) check_torchscript_trust(eval_path, answer.eval_findings, trust_code);
  const auto facts = read_worker_facts(worker_path);
  if (!facts) return;
  if (auto refusal = torchscript_incompatibility(model_path, archive, *facts, answer.unknown)) throw *refusal;
  if (eval_archive)
    if (auto refusal = torchscript_incompatibility(eval_path, *eval_archive, *facts, answer.eval_unknown))
      throw *refusal;
}

std::vector<std::string> torchscript_module_classes(const std::string& model_path, const std::string& worker_path) {
  read_torchscript_archive(model_path);  // a file that is no archive: the archive's own paragraph
  std::vector<std::string> out;
  for (const auto& [name, n] : ask_worker(model_path, worker_path, /*trust_code=*/false).classes)
    out.push_back(n > 1 ? fmt::format("{} (x{})", visible_text(name), n) : visible_text(name));
  return out;
}

void check_compiled_model(const config::JobView& job, const std::string& worker_path) {
  const std::string& dir = job.model.path;
  const CompiledManifest m = read_compiled_manifest(dir);
  // The programs take the dtypes they were exported with: mixed precision would hand them bf16 or
  // fp16 copies of the parameters, which the rank would refuse at its first step.
  if (config::is_mixed(job.precision))
    throw UsageError(
        fmt::format("train.precision is {}, but the compiled package '{}' was exported in fp32: its programs take "
                    "each parameter in the dtype it was compiled with, and mixed precision would give them {} "
                    "copies",
                    config::to_string(job.precision), visible_text(dir), config::to_string(job.precision)),
        "Set train.precision fp32 (--precision fp32) for a compiled package, or train the model's TorchScript "
        "file with mixed precision")
        .at("train.precision");
  // The programs take exactly the example's rows (AOTInductor checks no shape; the rank would
  // refuse the first batch): said here, before any rank starts.
  const int64_t rows = job.batch_size;
  for (const CompiledInput& in : m.inputs)
    if (!in.shape.empty() && in.shape[0] != rows)
      throw UsageError(
          fmt::format("{} rows per rank, but the compiled package '{}' was exported for '{}' of {} rows: its "
                      "programs run only the shapes they were compiled for",
                      rows, visible_text(dir), visible_text(in.name), in.shape[0]),
          fmt::format("Set train.batch_size (--batch-size) to {}, or export the package again with --example "
                      "{}=…:{}x… (mtrain export)",
                      in.shape[0], visible_text(in.name), rows))
          .at("train.batch_size");
  if (worker_path.empty()) return;
  const auto facts = read_worker_facts(worker_path);
  if (facts) {
    const std::string device = compiled_device(facts);
    check_compiled_target(m, facts->libtorch, device.empty() ? m.device : device);
  }
  // The worker's own word: that it runs compiled programs at all (not on LibTorch 1.13), the
  // release once more (no facts file beside an old worker), and model.init against the table.
  std::vector<std::string> argv = {worker_path, "model-check", "--compiled"};
  const std::string& init = job.model.init;
  if (!init.empty()) {
    argv.insert(argv.end(), {"--init", init});
    if (!job.model.init_strict) argv.push_back("--init-not-strict");
  }
  argv.push_back(dir);
  run_worker_check(argv, dir, worker_path, "compiled package");
}

void check_trainer_files(const config::json& job, const std::string& worker_path) {
  const config::JobView v = config::job_view(job);
  if (v.model.name == config::ModelName::Compiled) return check_compiled_model(v, worker_path);
  if (v.model.name == config::ModelName::Torchscript)
    check_torchscript_model(v.model.path, worker_path, v.model.trust_code, v.model.eval_path);
}

}  // namespace mtrain::launch
