#pragma once
// The scalars a tracker shows for one metrics.jsonl record (lib/trainer/loop/log_records.hpp):
// every number but the position keys, tagged by mode ("train/loss", "val/perplexity"), and the
// MLflow parameters of a resolved job (its settings, flattened to dotted keys). Pure.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/tracking/event_file.hpp"
#include "lib/mlflow/mlflow_client.hpp"

namespace mtrain::tracking {

// step, epoch and iter are the x axis, not series; other numeric fields become "<mode>/<key>".
std::vector<Scalar> scalars_of_record(const nlohmann::json& record);

// {"train": {"max_steps": 200}} → ("train.max_steps", "200"); strings bare, lists and other
// values as JSON; values cut to MLflow's 6000-character limit.
mlflow::KeyValues params_of_job(const nlohmann::json& job);

// The resolved job as a Markdown code block (TensorBoard's Text tab).
std::string job_markdown(const nlohmann::json& job);

}  // namespace mtrain::tracking
