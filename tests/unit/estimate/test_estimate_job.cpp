#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "mtrain/core/error.hpp"

#include "mtrain/config/registry.hpp"
#include "mtrain/estimate/estimate_job.hpp"

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
  const auto g = builtin_shape(job);
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
  const auto m = builtin_shape(job);
  REQUIRE(m);
  CHECK(m->num_params() == 32 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10);
  // Each layer is a block (the trainer's MlpModel::block_prefixes), so FSDP's units are the layers.
  CHECK(m->largest_unit() == 256 * 256 + 256);
  CHECK(m->params.front().unit == "layers.0");
  config::set(job, "model.name", "resnet18");
  CHECK_FALSE(builtin_shape(job));
}

TEST_CASE("settings come from the job", "[estimate]") {
  nlohmann::json job = config::job_spec(config::job_registry(), config::resolve(config::job_registry(), {}).job);
  config::set(job, "train.precision", "bf16");
  config::set(job, "fsdp.activation_checkpointing", true);
  const Settings s = settings_from_job(job, 8, 4);
  CHECK(s.precision == config::Precision::Bf16);
  CHECK(s.world == 8);
  CHECK(s.ranks_per_node == 4);
  CHECK(s.activation_checkpointing);
  CHECK_FALSE(s.scripted_export);
  config::set(job, "model.name", "torchscript");
  CHECK(settings_from_job(job, 1, 1).scripted_export);
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
