#pragma once
// `mtrain config init`: a short series of questions that adapt to earlier answers (where it
// runs → hostfile or Slurm; strategy → ZeRO offload or FSDP sharding; fp16 → loss scaling),
// each validated on the spot through the registry and the cross-field checks. Answers are read
// from an std::istream so tests drive it with a string and the CLI with the terminal.
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "lib/config/registry.hpp"

namespace mtrain::config {

struct WizardOptions {
  bool use_defaults = false;       // ask nothing: every question takes its default
  std::vector<std::string> sets;   // "key=value": answers given up front (those questions are skipped)
  // Before the strategy question (model, world and precision are known by then): the table of
  // what each strategy needs per rank, and the strategy it recommends ("" = none fits), which
  // becomes the question's default. Unset, or throwing: no table. `mtrain config init` wires it
  // to lib/estimate, which config may not link.
  struct Advice {
    std::string table;
    std::string recommended;
  };
  std::function<Advice(const Resolved& job)> advise;
  // For the FSDP units question (strategy fsdp, model torchscript): the submodule classes of the
  // model file ("Block (x2)", "Linear"), offered as fsdp.wrap_module_types; an answer naming a
  // class not among them is asked again. Unset, or throwing: no list, any answer. `mtrain config
  // init` wires it to the worker (launch/model_check.hpp), which config may not link.
  std::function<std::vector<std::string>(const std::string& model_path)> module_classes;
  // The launcher's model check, as `config validate` runs it (validate.hpp): on the model.path
  // answer (a refusal is explained and asked again) and on the job before it is written. Unset: the
  // file only has to exist.
  std::function<void(const json& job)> check_model;
};

// Runs the questions; returns the answers (and every --set) by key. Throws mtrain::Error when the
// input ends before the last question.
std::map<std::string, json> run_wizard(const Registry& reg, std::istream& in, std::ostream& out,
                                       const WizardOptions& opt);

// The job file text for a set of answers: help comments, values, how to run it.
std::string wizard_yaml(const Registry& reg, const std::map<std::string, json>& values,
                        const std::string& file_name);

struct InitOptions {
  std::string output = "job.yaml";
  bool force = false;
  WizardOptions wizard;
};

// Refuses to overwrite without force (before asking anything), runs the wizard, writes the file
// and checks it reads back valid. Returns the text written.
std::string init_job_file(const Registry& reg, const InitOptions& opt, std::istream& in, std::ostream& out);

}  // namespace mtrain::config
