// model.init: weights written under one strategy/world size load bit for bit under another
// (safetensors, mtrain's model.pt, a checkpoint folder); names and shapes are checked first,
// mismatches are one table; model.init_strict: false loads what matches; resume wins over init.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "lib/core/error.hpp"
#include "lib/trainer/checkpoint/checkpointer.hpp"
#include "lib/trainer/checkpoint/init_weights.hpp"
#include "lib/trainer/checkpoint/safetensors.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;
using mtrain::config::set;

namespace {

std::map<std::string, at::Tensor> read_safetensors(const fs::path& p) {
  SafetensorsReader r(p.string());
  std::map<std::string, at::Tensor> out;
  for (const auto& t : r.tensors()) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    out[t.name] = r.read(t.name, 0, n).view(t.shape);
  }
  return out;
}

void require_same(const std::map<std::string, at::Tensor>& a, const std::map<std::string, at::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (const auto& [k, v] : a) {
    INFO(k);
    REQUIRE(b.count(k) == 1);
    CHECK(v.scalar_type() == b.at(k).scalar_type());
    CHECK(at::equal(v, b.at(k)));  // bit for bit
  }
}

}  // namespace

TEST_CASE("match_init sorts tensors into matched, missing, unexpected and wrong shape", "[checkpoint][init]") {
  const std::vector<NamedShape> model = {{"a", {2, 3}}, {"b", {4}}, {"c", {5}}, {"a", {2, 3}}};
  const std::vector<NamedShape> file = {{"a", {2, 3}}, {"c", {6}}, {"d", {1}}};
  const InitMatch m = match_init(model, file);
  CHECK(m.matched == std::vector<std::string>{"a"});
  REQUIRE(m.missing.size() == 1);
  CHECK(m.missing[0].name == "b");
  REQUIRE(m.unexpected.size() == 1);
  CHECK(m.unexpected[0].name == "d");
  REQUIRE(m.wrong_shape.size() == 1);
  CHECK(m.wrong_shape[0].model == std::vector<int64_t>{5});
  CHECK(m.wrong_shape[0].file == std::vector<int64_t>{6});
  CHECK_FALSE(m.exact());
  const std::string t = format_init_mismatch(m);
  CHECK_THAT(t, Catch::Contains("missing") && Catch::Contains("unexpected") &&
                    Catch::Contains("wrong shape") && Catch::Contains("[5]") && Catch::Contains("[6]"));
  CHECK(match_init(file, file).exact());
  // A buffer the file lacks (mtrain's own files hold parameters only) is no mismatch.
  const InitMatch b = match_init({{"a", {2, 3}}, {"bn.running_mean", {3}, true}}, {{"a", {2, 3}}});
  CHECK(b.exact());
  REQUIRE(b.missing_buffers.size() == 1);
  CHECK(b.missing_buffers[0].name == "bn.running_mean");
  CHECK_THAT(format_init_mismatch(m, 1), Catch::Contains("... and 2 more"));
}

TEST_CASE("model.init loads the weights bit for bit under another strategy and world size", "[checkpoint][init]") {
  at::set_num_threads(1);
  const auto d = fresh_dir("init_roundtrip");
  auto j = small_job(d / "src");
  set(j, "strategy", "zero3");
  set(j, "train.max_steps", 4);
  set(j, "zero.stage3_param_persistence_threshold", 0);
  run_job(j, 2);
  const auto trained = read_safetensors(d / "src" / "model.safetensors");
  REQUIRE(!trained.empty());
  // model.safetensors holds the same tensors as model.pt.
  require_same(trained, load_dict(d / "src" / "model.pt"));
  {
    SafetensorsReader r((d / "src" / "model.safetensors").string());
    CHECK(r.metadata().at("format") == "pt");
    CHECK(r.metadata().at("step") == "4");
    CHECK(nlohmann::json::parse(r.metadata().at("job"))["strategy"] == "zero3");
  }
  const std::string ckpt = complete_checkpoints((d / "src" / "checkpoints").string()).back().second;

  struct Case {
    std::string strategy, precision, file;
    int world;
  };
  const std::vector<Case> cases = {
      {"fsdp", "fp32", (d / "src" / "model.safetensors").string(), 3},
      {"ddp", "fp32", (d / "src" / "model.pt").string(), 1},
      {"zero2", "bf16", (d / "src" / "model.safetensors").string(), 2},
      {"ddp", "fp32", ckpt, 2},
  };
  int k = 0;
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.strategy << " " << c.precision << " world " << c.world << " from " << c.file) {
      const fs::path wd = d / ("dst" + std::to_string(k++));
      auto j2 = small_job(wd);
      set(j2, "strategy", c.strategy);
      set(j2, "train.precision", c.precision);
      set(j2, "train.max_steps", 0);
      set(j2, "model.init", c.file);
      std::string console;
      run_job(j2, c.world, &console);
      CHECK_THAT(console, Catch::Contains("Initialised"));
      require_same(trained, read_safetensors(wd / "model.safetensors"));
    }
  }
}

TEST_CASE("model.init: a mismatch is one table, init_strict false loads what matches", "[checkpoint][init]") {
  at::set_num_threads(1);
  const auto d = fresh_dir("init_mismatch");
  auto j = small_job(d / "src", "mlp");
  set(j, "train.max_steps", 2);
  run_job(j, 1);
  const auto trained = read_safetensors(d / "src" / "model.safetensors");

  // A new head: more classes.
  auto j2 = small_job(d / "dst", "mlp");
  set(j2, "model.num_classes", 7);
  set(j2, "train.max_steps", 0);
  set(j2, "strategy", "zero3");
  set(j2, "zero.stage3_param_persistence_threshold", 0);
  set(j2, "model.init", (d / "src" / "model.safetensors").string());
  try {
    run_job(j2, 2);
    FAIL("a strict load of a mismatching file succeeded");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.message(), Catch::Contains("does not match the model") && Catch::Contains("wrong shape") &&
                                Catch::Contains("model.safetensors"));
    CHECK_THAT(e.hint(), Catch::Contains("model.init_strict: false"));
  }
  CHECK_FALSE(fs::exists(d / "dst"));  // checked before anything is written

  set(j2, "model.init_strict", false);
  std::string console;
  run_job(j2, 2, &console);
  CHECK_THAT(console, Catch::Contains("partial load") && Catch::Contains("wrong shape"));
  const auto loaded = read_safetensors(d / "dst" / "model.safetensors");
  int same = 0, kept = 0;
  for (const auto& [name, t] : loaded) {
    INFO(name);
    REQUIRE(trained.count(name) == 1);
    if (trained.at(name).sizes() == t.sizes()) {
      CHECK(at::equal(trained.at(name), t));
      ++same;
    } else {
      ++kept;  // the new head keeps its initial values
    }
  }
  CHECK(same > 0);
  CHECK(kept > 0);

  // A file of another model entirely: nothing matches, even when not strict.
  auto j3 = small_job(d / "dst3", "gpt");
  set(j3, "train.max_steps", 0);
  set(j3, "model.init", (d / "src" / "model.safetensors").string());
  set(j3, "model.init_strict", false);
  CHECK_THROWS_WITH(run_job(j3, 1), Catch::Contains("shares no tensor with the model"));
  // Not a weights file.
  std::ofstream(d / "junk.bin") << "hello, not weights";
  set(j3, "model.init", (d / "junk.bin").string());
  CHECK_THROWS_WITH(run_job(j3, 1), Catch::Contains("neither safetensors nor a torch.save zip"));
}

TEST_CASE("a resumed checkpoint takes precedence over model.init", "[checkpoint][init]") {
  at::set_num_threads(1);
  const auto d = fresh_dir("init_resume");
  auto j = small_job(d / "other", "mlp");
  set(j, "train.max_steps", 2);
  run_job(j, 1);
  auto j2 = small_job(d / "run", "mlp");
  set(j2, "train.max_steps", 4);
  run_job(j2, 1);
  set(j2, "train.max_steps", 8);
  set(j2, "checkpoint.resume", "auto");
  set(j2, "model.init", (d / "other" / "model.safetensors").string());
  std::string console;
  run_job(j2, 1, &console);
  CHECK_THAT(console, Catch::Contains("Resumed from") && Catch::Contains("not loaded: the resumed checkpoint takes precedence"));
  CHECK_THAT(console, !Catch::Contains("Initialised"));
}
