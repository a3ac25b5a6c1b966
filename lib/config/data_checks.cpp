#include "lib/config/data_checks.hpp"

#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "lib/config/job_choice.hpp"
#include "lib/config/names.hpp"
#include "lib/config/train_choices.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/token_file.hpp"
#include "lib/core/untrusted_file.hpp"

namespace fs = std::filesystem;

namespace mtrain::config {

namespace {

std::string text(const json& job, const std::string& key) { return get(job, key).get<std::string>(); }
long long integer(const json& job, const std::string& key) { return get(job, key).get<long long>(); }
ModelName model_of(const json& job) { return model_from_text(text(job, "model.name")); }

using Check = std::vector<Problem> (*)(const json& job);

// What a file setting of a dataset must name on disk.
enum class FileKind {
  Text,     // any readable file (its bytes are the tokens)
  Tensors,  // a torch.save'd {"input": X, "target": Y} (the ranks read the pickle)
  Tokens,   // a token file whose header agrees with its size (core/token_file.hpp)
  Cifar10,  // the folder of CIFAR-10's binary version
};

struct DataFile {
  const char* key;  // data.path, data.val_path
  FileKind kind;
  bool required;    // empty is an error (else empty means: none, or the embedded corpus)
  const char* hint;
};

struct DataRule {
  DataName name;
  Check model;  // can the model read it (pure)
  std::vector<DataFile> files;
};

std::vector<Problem> none(const json&) { return {}; }

// Synthetic data reads no file and has a task only for the built-in models: a data.path beside it
// (`--data-path train.pt` without `--data tensors`) or the user's own model would otherwise reach
// the ranks, which fail after start-up ("synthetic data has no task for model 'torchscript'").
std::vector<Problem> synthetic_model(const json& job) {
  const std::string path = text(job, "data.path");
  const std::string which = choice_at<DataName>(job, "data.name") == DataName::Auto
                                ? fmt::format("data.name is auto, which for model '{}' is synthetic data", text(job, "model.name"))
                                : std::string("data.name is synthetic");
  if (!path.empty())
    return {{true, {"data.name", "data.path"}, fmt::format("data.path '{}' is set but {}, which reads no file", path, which),
             "Name the file's format: --data tensors for a torch.save({\"input\": X, \"target\": Y}) file, "
             "--data tokens for a token file (train.bin), --data text or cifar10 for the built-in models "
             "(data.name in a job file); or drop data.path."}};
  if (model_of(job) == ModelName::Torchscript || model_of(job) == ModelName::Compiled)
    return {{true,
             {"data.name", "model.name"},
             fmt::format("{}, which has no task for your own model (model {})", which, text(job, "model.name")),
             "Give the data to train on: --data tensors --data-path FILE for a torch.save({\"input\": X, "
             "\"target\": Y}) file, or --data tokens --data-path train.bin for a language model (data.name "
             "and data.path in a job file)."}};
  return {};
}

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
  if (model_of(job) == ModelName::Mlp && integer(job, "model.input_dim") != 3LL * 32 * 32) {
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

constexpr const char* kCifar10Hint =
    "data.path is the folder of CIFAR-10's binary version (cifar-10-batches-bin: data_batch_1.bin … "
    "data_batch_5.bin and test_batch.bin).";
constexpr const char* kValHint = "Point data.val_path at an existing file, or leave it empty.";

// The one table: every dataset, the model it suits, and the files it reads. A new dataset adds
// one row; every data check below walks it.
const std::vector<DataRule>& data_rules() {
  static const std::vector<DataRule> rules = {
      {DataName::Synthetic, synthetic_model, {}},
      {DataName::Text, text_model,
       {{"data.path", FileKind::Text, false,
         "Give a text file (any bytes; it is read as byte-level tokens), or leave data.path empty for the "
         "embedded corpus."}}},
      {DataName::Cifar10, cifar10_model, {{"data.path", FileKind::Cifar10, true, kCifar10Hint}}},
      {DataName::Tensors, none,
       {{"data.path", FileKind::Tensors, true,
         "Set data.path (--data-path) to a file written by torch.save({\"input\": X, \"target\": Y}, PATH)."},
        {"data.val_path", FileKind::Tensors, false, kValHint}}},
      {DataName::Tokens, none,
       {{"data.path", FileKind::Tokens, true,
         "Set data.path (--data-path) to a token file: nanoGPT's train.bin or an llm.c .bin."},
        {"data.val_path", FileKind::Tokens, false, kValHint}}},
  };
  return rules;
}

// One file on this machine against its kind: "" when fine, else what is wrong (after the path).
std::string file_problem(const DataFile& f, const std::string& path) {
  if (f.kind == FileKind::Tokens) {
    try {
      (void)read_token_file_layout(path, f.key);
    } catch (const Error& e) {
      return e.message();  // names the setting and the file itself
    }
    return "";
  }
  if (auto why = unreadable(path, f.kind == FileKind::Cifar10); !why.empty())
    return fmt::format("{} '{}' {}", f.key, path, why);
  if (f.kind != FileKind::Cifar10) return "";
  std::vector<std::string> missing;
  for (const char* name : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                           "data_batch_5.bin", "test_batch.bin"})
    if (!unreadable(fs::path(path) / name, false).empty()) missing.push_back(name);
  if (missing.empty()) return "";
  return fmt::format("{} '{}' lacks {} of CIFAR-10 ({})", f.key, path, missing.size() == 1 ? "a file" : "files",
                     str::join(missing, ", "));
}

const DataRule* rule_for(const json& job) {
  const DataName name = effective_data_name(job);
  for (const auto& r : data_rules())
    if (name == r.name) return &r;
  return nullptr;  // the registry's choices and this table disagree: the ranks will say so
}

}  // namespace

DataName effective_data_name(const json& job) {
  const DataName name = choice_at<DataName>(job, "data.name");
  if (name != DataName::Auto) return name;
  return model_of(job) == ModelName::Gpt ? DataName::Text : DataName::Synthetic;
}

std::vector<Problem> data_model_problems(const json& job) {
  const DataRule* r = rule_for(job);
  return r ? r->model(job) : std::vector<Problem>{};
}

std::vector<Problem> data_file_problems(const json& job, bool on_disk) {
  const DataRule* r = rule_for(job);
  if (!r) return {};
  std::vector<Problem> out;
  for (const DataFile& f : r->files) {
    const std::string path = text(job, f.key);
    if (path.empty()) {
      if (f.required)
        out.push_back({true, {f.key, "data.name"}, fmt::format("{} is empty but data.name is {}", f.key, to_string(r->name)), f.hint});
    } else if (on_disk) {
      if (std::string why = file_problem(f, path); !why.empty()) out.push_back({true, {f.key}, why, f.hint});
    }
  }
  return out;
}

void check_data_files(const json& job) {
  for (const Problem& p : data_file_problems(job, true))
    if (p.error) throw Error(p.message, p.hint);
}

}  // namespace mtrain::config
