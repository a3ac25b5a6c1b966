// `mtrain checkpoint consolidate|inspect|verify`: the work needs LibTorch, which mtrain does not
// link, so the flags are checked here and the command runs as `mtrain-worker checkpoint …`
// (found next to mtrain, or in ../libexec/mtrain/, like `mtrain launch` finds it).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "commands.hpp"
#include "lib/completion/help.hpp"
#include "lib/config/cli_flags.hpp"
#include "lib/config/output_format.hpp"
#include "lib/config/weight_dtype.hpp"
#include "lib/core/error.hpp"
#include "lib/launch/launch.hpp"
#include "lib/config/weight_format.hpp"

namespace mtrain::app {

namespace {

struct CheckpointFlags {
  std::string dir, output;
  config::WeightDtype dtype = config::WeightDtype::Fp32;
  config::OutputFormat format = config::OutputFormat::Text;
  config::WeightFormat weights_format = config::WeightFormat::Pt;  // consolidate, when given (else from -o)
  std::string hf_config, hf_prefix;
  bool hf_prefix_given = false;
};

[[noreturn]] void exec_worker(const std::vector<std::string>& words) {
  const std::string worker = launch::own_worker();
  if (worker.empty()) {
    throw Error("mtrain checkpoint needs mtrain-worker (the LibTorch trainer), which is not "
                "installed next to mtrain or in ../libexec/mtrain/",
                "build with -DMTRAIN_WITH_TORCH=ON, or install mtrain-worker beside mtrain",
                kExitNotBuilt);
  }
  std::vector<std::string> args{worker, "checkpoint"};
  args.insert(args.end(), words.begin(), words.end());
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  ::execv(worker.c_str(), argv.data());
  throw RuntimeFailure(std::string("cannot run ") + worker + ": " + std::strerror(errno));
}

}  // namespace

void build_checkpoint(CLI::App* sub, Exit& exit) {
  (void)exit;
  sub->require_subcommand(1);
  auto f = std::make_shared<CheckpointFlags>();

  auto* con = sub->add_subcommand(
      "consolidate", "Stream a checkpoint's shards into one torch.load-able state dict or .safetensors "
                     "file, one tensor at a time");
  con->footer(completion::examples_block(
      {{"mtrain checkpoint consolidate wd/checkpoints/step_200 -o model.pt", "one state dict"}}));
  con->add_option("DIR", f->dir, "Checkpoint folder (<work_dir>/checkpoints/step_<N>)")->required();
  con->add_option("-o,--output", f->output, "The state dict to write (e.g. model.pt; a folder for --format hf)")
      ->required();
  config::add_choice_option(*con, "--dtype", f->dtype, "Dtype of floating tensors")
      ->default_str(config::to_string(f->dtype));
  CLI::Option* weights_format =
      config::add_choice_option(*con, "--format", f->weights_format,
                                "pt (torch.load-able), safetensors, or hf (a folder Hugging Face's from_pretrained "
                                "reads); default: safetensors for a .safetensors output, else pt");
  con->add_option("--hf-config", f->hf_config,
                  "--format hf: the Hugging Face model's config.json, copied beside model.safetensors");
  con->add_option("--hf-prefix", f->hf_prefix,
                  "--format hf: the wrapper's prefix to strip from every name (e.g. model; '' for "
                  "none); default: the first name component when all names share it")
      ->each([f](const std::string&) { f->hf_prefix_given = true; });
  con->callback([f, weights_format] {
    std::vector<std::string> words{"consolidate", f->dir, "-o", f->output, "--dtype", config::to_string(f->dtype)};
    if (weights_format->count() > 0) words.insert(words.end(), {"--format", config::to_string(f->weights_format)});
    if (!f->hf_config.empty()) words.insert(words.end(), {"--hf-config", f->hf_config});
    if (f->hf_prefix_given) words.insert(words.end(), {"--hf-prefix", f->hf_prefix});
    exec_worker(words);
  });

  auto* ins = sub->add_subcommand(
      "inspect", "Strategy, world size, step, tensors, sizes and verification status of a checkpoint");
  ins->add_option("DIR", f->dir, "Checkpoint folder")->required();
  config::add_choice_option(*ins, "--format", f->format, "Output format")->default_str(config::to_string(f->format));
  ins->callback([f] { exec_worker({"inspect", f->dir, "--format", config::to_string(f->format)}); });

  auto* ver = sub->add_subcommand(
      "verify", "Check every shard's size and CRC-32C against the manifest (exit 1 when damaged)");
  ver->add_option("DIR", f->dir, "Checkpoint folder")->required();
  ver->callback([f] { exec_worker({"verify", f->dir}); });
}

}  // namespace mtrain::app
