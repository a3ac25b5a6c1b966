#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "lib/core/error.hpp"

#include "lib/config/registry.hpp"
#include "lib/estimate/estimate_job.hpp"
#include "lib/config/job_view.hpp"
#include "temp_dir.hpp"

using namespace mtrain::estimate;
namespace config = mtrain::config;

TEST_CASE("built-in shapes are the trainer's: gpt and mlp parameter counts", "[estimate]") {
  nlohmann::json job = config::job_spec(config::job_registry(), config::resolve(config::job_registry(), {}).job);
  config::set(job, "model.name", "gpt");
  config::set(job, "model.n_layer", 32);
  config::set(job, "model.n_head", 32);
  config::set(job, "model.n_embd", 4096);
  config::set(job, "model.block_size", 2048);
  config::set(job, "model.vocab_size", 50304);
  const auto g = builtin_shape(config::job_view(job).model);
  REQUIRE(g);
  // 12C² + 13C per block, 2VC + TC + 2C outside (untied head, no head bias).
  const int64_t C = 4096, L = 32, V = 50304, T = 2048;
  CHECK(g->num_params() == L * (12 * C * C + 13 * C) + 2 * V * C + T * C + 2 * C);
  CHECK(g->largest_unit() == 2 * V * C + T * C + 2 * C);  // the root unit (embeddings and head)
  config::set(job, "model.name", "mlp");
  config::set(job, "model.depth", 3);
  config::set(job, "model.hidden", 256);
  config::set(job, "model.input_dim", 32);
  config::set(job, "model.num_classes", 10);
  const auto m = builtin_shape(config::job_view(job).model);
  REQUIRE(m);
  CHECK(m->num_params() == 32 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10);
  // Each layer is a block (the trainer's MlpModel::block_prefixes), so FSDP's units are the layers.
  CHECK(m->largest_unit() == 256 * 256 + 256);
  CHECK(m->params.front().unit == "layers.0");
  config::set(job, "model.name", "resnet18");
  CHECK_FALSE(builtin_shape(config::job_view(job).model));
}

TEST_CASE("settings come from the job", "[estimate]") {
  nlohmann::json job = config::job_spec(config::job_registry(), config::resolve(config::job_registry(), {}).job);
  config::set(job, "train.precision", "bf16");
  config::set(job, "fsdp.activation_checkpointing", true);
  const Settings s = settings_from_job(config::job_view(job), 8, 4);
  CHECK(s.precision == config::Precision::Bf16);
  CHECK(s.world == 8);
  CHECK(s.ranks_per_node == 4);
  CHECK(s.activation_checkpointing);
  CHECK_FALSE(s.scripted_export);
  config::set(job, "model.name", "torchscript");
  CHECK(settings_from_job(config::job_view(job), 1, 1).scripted_export);
  // zero.reduce_bucket_size 'auto' is n_embd², as the trainer resolves it (not DeepSpeed's 5e8).
  config::set(job, "model.n_embd", 1280);
  config::set(job, "zero.reduce_bucket_size", "auto");
  CHECK(settings_from_job(config::job_view(job), 4, 4).zero_reduce_bucket == 1280 * 1280);
  config::set(job, "zero.reduce_bucket_size", 1000);
  CHECK(settings_from_job(config::job_view(job), 4, 4).zero_reduce_bucket == 1000);
}

TEST_CASE("a safetensors file's shapes come from its header, blocks as units", "[estimate]") {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"model.embed.weight":{"dtype":"F32","shape":[10,4],"data_offsets":[0,160]},)"
      R"("model.layers.0.w":{"dtype":"F32","shape":[4,4],"data_offsets":[160,224]},)"
      R"("model.layers.1.w":{"dtype":"F32","shape":[4,4],"data_offsets":[224,288]}})";
  const std::string path = "/tmp/mtrain_test_estimate_" + std::to_string(::getpid()) + ".safetensors";
  {
    std::ofstream f(path, std::ios::binary);
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xff));
    f << header << std::string(288, '\0');
  }
  const ModelShape m = safetensors_shape(path);
  CHECK(m.num_params() == 40 + 16 + 16);
  CHECK(m.params[1].unit == "model.layers.0");
  CHECK(m.params[0].unit.empty());
  CHECK(m.largest_unit() == 40);
  std::ofstream(path) << "not safetensors at all";
  CHECK_THROWS_AS(safetensors_shape(path), mtrain::Error);
  std::remove(path.c_str());
}

namespace {

// A stand-in for mtrain-worker whose estimate-probe writes `stderr_text` and exits `code`.
std::string fake_worker(const mtrain::testing::TempDir& d, const std::string& stderr_text, int code) {
  const std::string path = d.write("fake-worker", "#!/bin/sh\nprintf '%s\\n' '" + stderr_text + "' >&2\nexit " +
                                                       std::to_string(code) + "\n");
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

nlohmann::json small_gpt() {
  nlohmann::json job = config::job_spec(config::job_registry(), config::resolve(config::job_registry(), {}).job);
  config::set(job, "model.name", "gpt");
  return job;
}

// TMPDIR and the probe cache pointed at `d` while a test runs.
struct ProbeEnv {
  explicit ProbeEnv(const mtrain::testing::TempDir& d) {
    ::setenv("TMPDIR", d.str().c_str(), 1);
    ::setenv("MTRAIN_CACHE_DIR", (d.str() + "/cache").c_str(), 1);
  }
  ~ProbeEnv() {
    ::unsetenv("TMPDIR");
    ::unsetenv("MTRAIN_CACHE_DIR");
  }
};

}  // namespace

// Issue 40 item 4: the probe's stderr went through a shell `2>` to $TMPDIR/mtrain-estimate-<pid>.err,
// so a symbolic link planted there had its target truncated and filled with the probe's output.
TEST_CASE("the probe's stderr comes back through a pipe: a link at the old temp path is untouched", "[estimate]") {
  mtrain::testing::TempDir d("est_probe");
  ProbeEnv env(d);
  const std::string victim = d.write("victim.txt", "precious\n");
  const std::string planted = d.str() + "/mtrain-estimate-" + std::to_string(::getpid()) + ".err";
  std::filesystem::create_symlink(victim, planted);
  const nlohmann::json job = small_gpt();
  const Settings s = settings_from_job(config::job_view(job), 1, 1);
  std::string message;
  int code = 0;
  try {
    (void)measure(job, config::job_view(job).model, s, fake_worker(d, "probe failed: \x1b]0;owned\x07 bad model", 1));
  } catch (const mtrain::Error& e) {
    message = e.message();
    code = e.exit_code();
  }
  CHECK_THAT(message, Catch::Contains("probe failed:"));
  CHECK_THAT(message, Catch::Contains("^[]0;owned^G"));  // the child's text, made visible
  CHECK(message.find('\x1b') == std::string::npos);
  CHECK(code == mtrain::kExitFailure);
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "precious\n");
  CHECK(std::filesystem::is_symlink(planted));
}

// Issue 40 item 12: a probe that refuses its input (the worker's usage errors exit 2) makes
// `mtrain estimate` exit 2 too, not 1.
TEST_CASE("a probe that refuses the model (exit 2) is a usage error", "[estimate]") {
  mtrain::testing::TempDir d("est_probe");
  ProbeEnv env(d);
  const nlohmann::json job = small_gpt();
  try {
    (void)measure(job, config::job_view(job).model, settings_from_job(config::job_view(job), 1, 1),
                  fake_worker(d, "error: the model is refused", 2));
    FAIL("the probe's refusal was not an error");
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == mtrain::kExitUsage);
    CHECK_THAT(e.message(), Catch::Contains("the model is refused"));
  }
}
