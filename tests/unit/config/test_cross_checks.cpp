#include <catch2/catch.hpp>

#include "lib/config/cross_checks.hpp"

using namespace mtrain::config;

namespace {
std::vector<Problem> check(std::map<std::string, json> values) {
  const auto& reg = job_registry();
  return cross_check(reg, resolve(reg, {Layer{Source::JobFile, "job.yaml", std::move(values)}}));
}
// A TorchScript model with data it can train on (a tensors file), plus `values`.
std::map<std::string, json> own(std::map<std::string, json> values) {
  values.emplace("model.name", "torchscript");
  values.emplace("data.name", "tensors");
  values.emplace("data.path", std::string(MTRAIN_SOURCE_DIR) + "/CMakeLists.txt");
  return values;
}
size_t errors(const std::vector<Problem>& ps) {
  size_t n = 0;
  for (const auto& p : ps) n += p.error;
  return n;
}
}  // namespace

TEST_CASE("defaults pass the cross-field checks", "[config]") { CHECK(check({}).empty()); }

TEST_CASE("global batch must equal micro batch x accumulation x world size", "[config]") {
  auto ok = check({{"train.batch_size", 4}, {"train.grad_accum", 2}, {"train.global_batch_size", 64},
                   {"launch.nproc_per_node", "4"}, {"launch.nnodes", 2}});
  CHECK(errors(ok) == 0);
  auto bad = check({{"train.batch_size", 4}, {"train.grad_accum", 2}, {"train.global_batch_size", 64},
                    {"launch.nproc_per_node", "4"}, {"launch.nnodes", 1}});
  REQUIRE(errors(bad) == 1);
  CHECK_THAT(bad[0].message, Catch::Contains("is 32"));
  // World size unknown (auto): only divisibility can be checked.
  CHECK(errors(check({{"train.batch_size", 4}, {"train.global_batch_size", 64}})) == 0);
  CHECK(errors(check({{"train.batch_size", 5}, {"train.global_batch_size", 64}})) == 1);
}

TEST_CASE("offloading needs the right ZeRO stage", "[config]") {
  CHECK(errors(check({{"strategy", "zero3"}, {"zero.offload_param_device", "cpu"}})) == 0);
  auto bad = check({{"strategy", "zero2"}, {"zero.offload_param_device", "cpu"}});
  REQUIRE(errors(bad) == 1);
  CHECK(bad[0].keys[0] == "zero.offload_param_device");
  CHECK(errors(check({{"strategy", "ddp"}, {"zero.offload_optimizer_device", "cpu"}})) == 1);
  CHECK(errors(check({{"strategy", "zero1"}, {"zero.offload_optimizer_device", "cpu"}})) == 0);
  CHECK(errors(check({{"strategy", "zero2"}, {"zero.stage", 3}})) == 1);
}

TEST_CASE("gpt width must divide by heads, unused knobs warn", "[config]") {
  CHECK(errors(check({{"model.n_head", 6}, {"model.n_embd", 128}})) == 1);
  CHECK(errors(check({{"model.name", "mlp"}, {"model.n_head", 6}})) == 0);
  auto w = check({{"fsdp.cpu_offload", true}, {"precision.loss_scale", 128.0}});
  CHECK(errors(w) == 0);
  CHECK(w.size() == 2);
  CHECK(errors(check({{"launch.launcher", "ssh"}})) == 1);
  CHECK(errors(check({{"launch.launcher", "local"}, {"launch.nnodes", 2}})) == 1);
}

TEST_CASE("train.average_tokens_across_ranks needs a loss whose targets the trainer counts", "[config]") {
  const std::string here = std::string(MTRAIN_SOURCE_DIR) + "/CMakeLists.txt";  // any existing file
  for (const char* loss : {"lm_cross_entropy", "cross_entropy"})
    CHECK(errors(check(
              own({{"model.path", here}, {"model.loss", loss}, {"train.average_tokens_across_ranks", true}}))) == 0);
  for (const char* loss : {"auto", "mse"}) {
    auto bad = check(own({{"model.path", here}, {"model.loss", loss}, {"train.average_tokens_across_ranks", true}}));
    REQUIRE(errors(bad) == 1);
    CHECK(bad[0].keys[0] == "train.average_tokens_across_ranks");
    CHECK_THAT(bad[0].message, Catch::Contains(std::string("model.loss is ") + loss));
  }
  CHECK(errors(check(own({{"model.path", here}, {"model.loss", "mse"}}))) == 0);
}

TEST_CASE("torchscript and data: files must exist before any rank starts", "[config]") {
  const std::string here = std::string(MTRAIN_SOURCE_DIR) + "/CMakeLists.txt";  // any existing file
  CHECK(errors(check(own({{"model.path", here}}))) == 0);
  auto none = check(own({}));
  REQUIRE(errors(none) == 1);
  CHECK_THAT(none[0].message, Catch::Contains("model.path is empty"));
  auto missing = check(own({{"model.path", "/nonexistent/net.pt"}}));
  REQUIRE(errors(missing) == 1);
  CHECK_THAT(missing[0].message, Catch::Contains("'/nonexistent/net.pt' does not exist"));
  // The eval-mode trace of a traced pair (issue 44 item 1): checked as model.path is.
  CHECK(errors(check(own({{"model.path", here}, {"model.eval_path", here}}))) == 0);
  auto no_eval = check(own({{"model.path", here}, {"model.eval_path", "/nonexistent/eval.pt"}}));
  REQUIRE(errors(no_eval) == 1);
  CHECK(no_eval[0].keys[0] == "model.eval_path");
  CHECK_THAT(no_eval[0].message, Catch::Contains("model.eval_path '/nonexistent/eval.pt' does not exist"));
  CHECK_THAT(no_eval[0].hint, Catch::Contains("torch.jit.trace(model.eval(), example)"));
  // On other hosts the path is the node's: not checked here.
  CHECK(errors(check(own({{"model.path", "/nonexistent/net.pt"}, {"launch.launcher", "ssh"},
                          {"launch.hostfile", here}}))) == 0);
  // Activation checkpointing needs blocks: named, or FSDP's size units.
  auto no_blocks = check(own({{"model.path", here}, {"fsdp.activation_checkpointing", true}}));
  REQUIRE(errors(no_blocks) == 1);
  CHECK_THAT(no_blocks[0].message, Catch::Contains("fsdp.wrap_module_types is empty"));
  CHECK(errors(check(own({{"model.path", here}, {"fsdp.activation_checkpointing", true},
                          {"fsdp.wrap_module_types", "Block"}}))) == 0);
  CHECK(errors(check(own({{"model.path", here}, {"fsdp.activation_checkpointing", true},
                          {"fsdp.wrap_policy", "size"}}))) == 0);
  // Under ddp the block names still matter (checkpointing): no "has no effect" warning.
  CHECK(check(own({{"model.path", here}, {"strategy", "ddp"}, {"fsdp.activation_checkpointing", true},
                   {"fsdp.wrap_module_types", "Block"}}))
            .empty());
  // A dataset's file settings: here what the settings show (data_checks.cpp's table); the files
  // themselves on the host whose ranks read them (test_launch_checks.cpp).
  auto no_data = check({{"data.name", "tensors"}});
  REQUIRE(errors(no_data) == 1);
  CHECK_THAT(no_data[0].message, Catch::Contains("data.path is empty but data.name is tensors"));
  CHECK(errors(check({{"data.name", "tensors"}, {"data.path", here}})) == 0);
  CHECK(errors(check({{"data.name", "cifar10"}, {"model.name", "resnet18"}})) == 1);
}

// Issue 45: `--model-path net.pt` without `--model torchscript` trained the built-in gpt and
// `--data-path train.pt` without `--data tensors` fed synthetic data; both failed in every rank
// after start-up. Now both are refused here, which `config validate` and every launch run.
TEST_CASE("a model or data path the chosen model or dataset does not read is refused, naming the flag", "[config]") {
  const std::string here = std::string(MTRAIN_SOURCE_DIR) + "/CMakeLists.txt";
  auto gpt = check({{"model.path", here}});
  REQUIRE(errors(gpt) == 1);
  CHECK(gpt[0].keys[0] == "model.path");
  CHECK_THAT(gpt[0].message, Catch::Contains("model.name is gpt (the default), which does not read it"));
  CHECK_THAT(gpt[0].hint, Catch::Contains("--model torchscript"));
  auto mlp = check({{"model.name", "mlp"}, {"model.path", here}});
  REQUIRE(errors(mlp) == 1);
  CHECK_THAT(mlp[0].message, Catch::Contains("model.name is mlp, which"));
  auto eval_gpt = check({{"model.eval_path", here}});
  REQUIRE(errors(eval_gpt) == 1);
  CHECK(eval_gpt[0].keys[0] == "model.eval_path");
  CHECK_THAT(eval_gpt[0].message, Catch::Contains("model.eval_path '" + here + "' is set but model.name is gpt"));

  auto data = check({{"model.name", "torchscript"}, {"model.path", here}, {"data.path", here}});
  REQUIRE(errors(data) == 1);
  CHECK(data[0].keys[0] == "data.name");
  CHECK_THAT(data[0].message, Catch::Contains("data.name is auto, which for model 'torchscript' is synthetic data"));
  CHECK_THAT(data[0].hint, Catch::Contains("--data tensors"));
  auto no_data = check({{"model.name", "torchscript"}, {"model.path", here}});
  REQUIRE(errors(no_data) == 1);
  CHECK_THAT(no_data[0].message, Catch::Contains("has no task for your own model"));
  CHECK(errors(check({{"model.name", "mlp"}, {"data.name", "synthetic"}, {"data.path", here}})) == 1);
  // What trains stays accepted: gpt on a text file, mlp on synthetic data.
  CHECK(errors(check({{"data.path", here}})) == 0);
  CHECK(errors(check({{"model.name", "mlp"}})) == 0);
}

TEST_CASE("strategy auto: the strategy checks wait for the launcher's choice, the rest still run", "[config]") {
  CHECK(check({{"strategy", "auto"}}).empty());
  CHECK(errors(check({{"strategy", "auto"}, {"zero.offload_optimizer_device", "cpu"}})) == 0);
  CHECK(errors(check({{"strategy", "auto"}, {"model.n_embd", 100}, {"model.n_head", 3}})) == 1);
}

// Issue 47: a compiled package is a folder of native code — refused without model.trust_code,
// and a file or nothing where the folder should be, before any rank starts.
TEST_CASE("model.name compiled: a package folder, run only with model.trust_code", "[config]") {
  const std::string dir = MTRAIN_SOURCE_DIR;
  const std::string data = dir + "/CMakeLists.txt";
  auto compiled = [&](std::map<std::string, json> v) {
    v.emplace("model.name", "compiled");
    v.emplace("data.name", "tensors");
    v.emplace("data.path", data);
    return check(std::move(v));
  };
  CHECK(errors(compiled({{"model.path", dir}, {"model.trust_code", true}})) == 0);
  auto untrusted = compiled({{"model.path", dir}});
  REQUIRE(errors(untrusted) == 1);
  CHECK(untrusted[0].keys[0] == "model.trust_code");
  CHECK_THAT(untrusted[0].message, Catch::Contains("holds native code"));
  CHECK_THAT(untrusted[0].hint, Catch::Contains("model.trust_code=true"));
  auto file = compiled({{"model.path", data}, {"model.trust_code", true}});
  REQUIRE(errors(file) == 1);
  CHECK_THAT(file[0].message, Catch::Contains("is not a folder"));
  auto empty = compiled({{"model.trust_code", true}});
  REQUIRE(errors(empty) == 1);
  CHECK_THAT(empty[0].message, Catch::Contains("model.path is empty but model.name is compiled"));
  auto no_data = check({{"model.name", "compiled"}, {"model.path", dir}, {"model.trust_code", true}});
  REQUIRE(errors(no_data) == 1);
  CHECK_THAT(no_data[0].message, Catch::Contains("no task for your own model (model compiled)"));
}
