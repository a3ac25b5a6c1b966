#pragma once
// What each dataset of the bundled trainer can feed and what it needs on disk, as one table
// (data_rules) that both checks below walk. The launcher runs them before any rank starts; the
// ranks check the same again when they open the data. A new dataset adds one row.
#include <string>
#include <vector>

#include "mtrain/config/cross_checks.hpp"

namespace mtrain::config {

// data.name after `auto`: text for gpt (the embedded corpus unless data.path is set), synthetic
// for every other model.
std::string effective_data_name(const json& job);

// Model/data combinations that cannot train (resnet18 on text, gpt on cifar10, …). Pure.
std::vector<Problem> data_model_problems(const json& job);

// data.path against the file system: missing files or folders, the wrong kind of path.
std::vector<Problem> data_path_problems(const json& job);

}  // namespace mtrain::config
