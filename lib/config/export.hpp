#pragma once
// A resolved job in the forms the other tools hand to training scripts — the inverse of
// import.hpp, so that import(export(job)) gives back every key both sides map:
//   DeepSpeed: a ds_config.json (`--deepspeed_config FILE`, launch.pass_config deepspeed);
//   accelerate: a config.yaml (`mtrain config export --to accelerate`), and the environment
//   `accelerate launch` sets for its scripts (launch.pass_config accelerate).
// Each exporter also says which settings it has no place for, so nothing is dropped silently.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/config/launch_choices.hpp"
#include "lib/config/registry.hpp"

namespace mtrain::config {

struct ExportResult {
  json doc;                           // ds_config.json, or accelerate's config as JSON
  std::set<std::string> mapped;       // setting keys the document carries
};

// world_size: ranks over all nodes, 0 when unknown (train_batch_size is then written only when
// train.global_batch_size is set; DeepSpeed derives it from micro batch x accumulation x world).
ExportResult export_deepspeed(const json& job, long long world_size = 0);
ExportResult export_accelerate(const json& job);

// The variables accelerate/utils/launch.py (prepare_multi_gpu_env, prepare_deepspeed_cmd_env,
// prepare_simple_launcher_cmd_env) sets for a script; `mapped` as above.
std::map<std::string, std::string> accelerate_env(const json& job, std::set<std::string>* mapped = nullptr);

// launch.pass_config (launch_choices.hpp). The trainer settings given (not defaults)
// that the program will not get that way, as "key=value"; empty when all reach it.
std::vector<std::string> unread_settings(const Registry& reg, const Resolved& r, PassConfig pass_config);
// One warning paragraph for them ("" when none).
std::string unread_warning(const std::vector<std::string>& unread, PassConfig pass_config);

}  // namespace mtrain::config
