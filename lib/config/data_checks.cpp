#include "mtrain/config/data_checks.hpp"

#include <unistd.h>

#include <filesystem>

#include "mtrain/core/untrusted_file.hpp"

#include <fmt/format.h>

#include "mtrain/config/names.hpp"
#include "mtrain/core/strings.hpp"

namespace fs = std::filesystem;

namespace mtrain::config {

namespace {

std::string text(const json& job, const std::string& key) { return get(job, key).get<std::string>(); }
long long integer(const json& job, const std::string& key) { return get(job, key).get<long long>(); }
ModelName model_of(const json& job) { return model_from_text(text(job, "model.name")); }

using Check = std::vector<Problem> (*)(const json& job);

struct DataRule {
  const char* name;
  Check model;  // can the model read it (pure)
  Check path;   // is data.path there (file system)
};

std::vector<Problem> none(const json&) { return {}; }

std::vector<Problem> text_model(const json& job) {
  const std::string model = text(job, "model.name");
  if (model_of(job) != ModelName::Gpt)
    return {{true, {"data.name", "model.name"},
             fmt::format("data 'text' is byte-level language modelling, which model '{}' cannot learn", model),
             "Use model gpt for text, or data synthetic (or cifar10 for resnet18/resnet50/mlp)."}};
  if (integer(job, "model.vocab_size") < 256)
    return {{true, {"model.vocab_size", "data.name"},
             fmt::format("data 'text' has 256 byte values but model.vocab_size is {}", integer(job, "model.vocab_size")),
             "Set model.vocab_size to 256 or more."}};
  return {};
}

std::vector<Problem> cifar10_model(const json& job) {
  const std::string model = text(job, "model.name");
  std::vector<Problem> out;
  if (model_of(job) == ModelName::Mlp && integer(job, "model.input_dim") != 3 * 32 * 32) {
    out.push_back({true, {"model.input_dim", "data.name"},
                   fmt::format("cifar10 images have 3072 values but model.input_dim is {}", integer(job, "model.input_dim")),
                   "Set model.input_dim to 3072, or use resnet18/resnet50."});
  } else if (model_of(job) != ModelName::Mlp && !is_resnet(model_of(job))) {
    out.push_back({true, {"data.name", "model.name"},
                   fmt::format("data 'cifar10' is image classification, which model '{}' cannot learn", model),
                   "Use resnet18, resnet50 or mlp (model.input_dim 3072) for cifar10."});
  }
  if (integer(job, "model.num_classes") < 10)
    out.push_back({true, {"model.num_classes", "data.name"},
                   fmt::format("cifar10 has 10 classes but model.num_classes is {}", integer(job, "model.num_classes")),
                   "Set model.num_classes to 10."});
  return out;
}

// An existing path of the expected kind that this user can read, else why not.
std::string unreadable(const fs::path& p, bool folder) {
  std::error_code ec;
  const auto st = fs::status(p, ec);
  if (!fs::exists(st)) return "does not exist";
  if (folder && !fs::is_directory(st)) return "is not a folder";
  if (!folder && fs::is_directory(st)) return "is a folder, not a file";
  // A FIFO or a device (a link to /dev/zero) would block or read forever in the ranks.
  if (!folder) {
    if (std::string why = not_regular_file(p.string()); !why.empty()) return why;
  }
  if (access(p.c_str(), folder ? (R_OK | X_OK) : R_OK) != 0) return "is not readable by you";
  return "";
}

std::vector<Problem> text_path(const json& job) {
  const std::string path = text(job, "data.path");
  if (path.empty()) return {};  // the embedded corpus
  if (auto why = unreadable(path, false); !why.empty())
    return {{true, {"data.path"}, fmt::format("data.path '{}' {}", path, why),
             "Give a text file (any bytes; it is read as byte-level tokens), or leave data.path empty for the "
             "embedded corpus."}};
  return {};
}

std::vector<Problem> cifar10_path(const json& job) {
  const std::string path = text(job, "data.path");
  const char* hint = "data.path is the folder of CIFAR-10's binary version (cifar-10-batches-bin: data_batch_1.bin … "
                     "data_batch_5.bin and test_batch.bin).";
  if (path.empty()) return {{true, {"data.path", "data.name"}, "data 'cifar10' needs data.path", hint}};
  if (auto why = unreadable(path, true); !why.empty())
    return {{true, {"data.path"}, fmt::format("data.path '{}' {}", path, why), hint}};
  std::vector<std::string> missing;
  for (const char* f : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                        "data_batch_5.bin", "test_batch.bin"})
    if (!unreadable(fs::path(path) / f, false).empty()) missing.push_back(f);
  if (!missing.empty())
    return {{true, {"data.path"},
             fmt::format("data.path '{}' lacks {} of CIFAR-10 ({})", path, missing.size() == 1 ? "a file" : "files",
                         str::join(missing, ", ")),
             hint}};
  return {};
}

const std::vector<DataRule>& data_rules() {
  static const std::vector<DataRule> rules = {
      {"synthetic", none, none},
      {"text", text_model, text_path},
      {"cifar10", cifar10_model, cifar10_path},
  };
  return rules;
}

const DataRule* rule_for(const json& job) {
  const std::string name = effective_data_name(job);
  for (const auto& r : data_rules())
    if (name == r.name) return &r;
  return nullptr;  // the registry's choices and this table disagree: the ranks will say so
}

}  // namespace

std::string effective_data_name(const json& job) {
  const std::string name = text(job, "data.name");
  if (name != "auto") return name;
  return model_of(job) == ModelName::Gpt ? "text" : "synthetic";
}

std::vector<Problem> data_model_problems(const json& job) {
  const DataRule* r = rule_for(job);
  return r ? r->model(job) : std::vector<Problem>{};
}

std::vector<Problem> data_path_problems(const json& job) {
  const DataRule* r = rule_for(job);
  return r ? r->path(job) : std::vector<Problem>{};
}

}  // namespace mtrain::config
