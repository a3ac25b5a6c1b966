// The compiled package's manifest (lib/core/compiled_manifest.cpp, issue 47): a good one is read
// into types; each damage is one paragraph naming the manifest and the field.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "error_text.hpp"
#include "lib/core/compiled_manifest.hpp"
#include "temp_dir.hpp"

using namespace mtrain;
using mtrain::testing::error_text;
using mtrain::testing::TempDir;
using nlohmann::json;

namespace {

json program(const std::string& stem) { return {{"file", "programs/" + stem + ".pt2"}, {"key", "k" + stem}}; }

// The shape python/mtrain_export/package.py writes, for a model with one unit.
json good() {
  auto tensor = [](const std::string& name, json shape) {
    return json{{"name", name},          {"kind", "parameter"},   {"shape", shape},    {"dtype", "float32"},
                {"requires_grad", true}, {"tied", json::array()}, {"persistent", true}};
  };
  return {
      {"format", "mtrain-compiled"},
      {"format_version", 2},
      {"torch", "2.15.0+cu132"},
      {"device", "cpu"},
      {"inputs",
       {{{"name", "input"}, {"dtype", "int64"}, {"shape", {6, 8}}},
        {{"name", "target"}, {"dtype", "int64"}, {"shape", {6, 8}}}}},
      {"hidden", {{"shape", {6, 8, 16}}, {"dtype", "float32"}}},
      {"tensors", {tensor("wte.weight", {32, 16}), tensor("blocks.0.w", {16, 16}), tensor("head.weight", {32, 16})}},
      {"prologue",
       {{"args", {"wte.weight", "input"}},
        {"grads", {"wte.weight"}},
        {"forward", program("prologue_forward")},
        {"backward", program("prologue_backward")}}},
      {"units",
       {{{"name", "blocks.0"},
         {"type", "Block"},
         {"args", {"blocks.0.w"}},
         {"grads", {"blocks.0.w"}},
         {"forward", program("unit0_forward")},
         {"backward", program("unit0_backward")},
         {"saved", {{{"dtype", "float32"}, {"shape", {6, 8, 64}}}}}}}},
      {"epilogue",
       {{"args", {"head.weight", "target", "hidden"}},
        {"grads", {"head.weight"}},
        {"forward", program("epilogue_forward")},
        {"step", program("epilogue_step")}}}};
}

void write(const TempDir& d, const json& manifest) {
  std::filesystem::create_directories(d.path / "programs");
  for (const char* stem : {"prologue_forward", "prologue_backward", "unit0_forward", "unit0_backward",
                           "epilogue_forward", "epilogue_step"})
    std::ofstream(d.path / "programs" / (std::string(stem) + ".pt2")) << "pt2";
  std::ofstream(d.path / "manifest.json") << manifest.dump();
}

std::string refusal(const json& manifest) {
  TempDir d("mtrain_compiled_manifest");
  write(d, manifest);
  return error_text([&] { read_compiled_manifest(d.str()); });
}

}  // namespace

TEST_CASE("compiled manifest: a good manifest is read into types", "[compiled_manifest]") {
  TempDir d("mtrain_compiled_manifest");
  write(d, good());
  const CompiledManifest m = read_compiled_manifest(d.str());
  CHECK(m.torch_version == "2.15.0+cu132");
  CHECK(m.device == "cpu");
  REQUIRE(m.inputs.size() == 2);
  CHECK(m.inputs[1].shape == std::vector<int64_t>{6, 8});
  CHECK(m.hidden_shape == std::vector<int64_t>{6, 8, 16});
  REQUIRE(m.tensors.size() == 3);
  CHECK(m.tensors[0].shape == std::vector<int64_t>{32, 16});
  REQUIRE(m.units.size() == 1);
  CHECK(m.units[0].name == "blocks.0");
  CHECK(m.units[0].backward.file == "programs/unit0_backward.pt2");
  REQUIRE(m.units[0].saved.size() == 1);
  CHECK(m.units[0].saved[0].shape == std::vector<int64_t>{6, 8, 64});
  CHECK(m.units[0].saved[0].dtype == "float32");
  CHECK(m.epilogue.backward.file == "programs/epilogue_step.pt2");
  CHECK(m.epilogue.args == std::vector<std::string>{"head.weight", "target", "hidden"});
}

TEST_CASE("compiled manifest: a missing or damaged manifest is one paragraph", "[compiled_manifest]") {
  TempDir d("mtrain_compiled_manifest");
  CHECK_THAT(error_text([&] { read_compiled_manifest(d.str()); }),
             Catch::Contains("is not a compiled package: its manifest.json does not exist") &&
                 Catch::Contains("mtrain export MODULE.py:FACTORY"));
  std::ofstream(d.path / "manifest.json") << "{not json";
  CHECK_THAT(error_text([&] { read_compiled_manifest(d.str()); }), Catch::Contains("is not JSON"));
}

TEST_CASE("compiled manifest: bad or missing fields name the field", "[compiled_manifest]") {
  json j = good();
  j.erase("device");
  CHECK_THAT(refusal(j), Catch::Contains("manifest.json' is not usable: device is missing"));
  j = good();
  j["format_version"] = 1;  // a unit's backward recomputed its forward: its programs take other arguments
  CHECK_THAT(refusal(j), Catch::Contains("format_version is 1, this mtrain reads version 2"));
  j = good();
  j["tensors"][1]["shape"] = {16, -1};
  CHECK_THAT(refusal(j), Catch::Contains("tensors[1].shape holds a dimension that is not an integer"));
  j = good();
  j["tensors"][0]["dtype"] = "complex64";
  CHECK_THAT(refusal(j), Catch::Contains("tensors[0].dtype names the dtype 'complex64'"));
  j = good();
  j["tensors"][2]["tied"] = {"wte.weight"};
  CHECK_THAT(refusal(j), Catch::Contains("tensors[2] names 'wte.weight' twice"));
  j = good();
  j["units"][0]["args"] = {"blocks.0.v"};
  CHECK_THAT(refusal(j), Catch::Contains("units[0].args names 'blocks.0.v', which is no tensor or input"));
  j = good();
  j["units"][0]["grads"] = json::array();
  CHECK_THAT(refusal(j), Catch::Contains("trainable parameter 'blocks.0.w', which no program returns a gradient"));
  j = good();
  j["units"][0].erase("saved");
  CHECK_THAT(refusal(j), Catch::Contains("units[0].saved is missing"));
  j = good();
  j["units"][0]["saved"][0]["dtype"] = "complex64";
  CHECK_THAT(refusal(j), Catch::Contains("units[0].saved[0].dtype names the dtype 'complex64'"));
}

TEST_CASE("compiled manifest: a program must be a present file inside programs/", "[compiled_manifest]") {
  json j = good();
  j["units"][0]["forward"]["file"] = "programs/../../etc/passwd.pt2";
  CHECK_THAT(refusal(j), Catch::Contains("units[0].forward.file '") && Catch::Contains("is not programs/<name>.pt2"));
  j = good();
  j["epilogue"]["step"]["file"] = "programs/gone.pt2";
  CHECK_THAT(refusal(j), Catch::Contains("epilogue.step.file names programs/gone.pt2, which does not exist"));
  j = good();
  j["epilogue"].erase("step");
  CHECK_THAT(refusal(j), Catch::Contains("epilogue.step is missing"));
}

TEST_CASE("compiled manifest: another PyTorch release or device is refused", "[compiled_manifest]") {
  TempDir d("mtrain_compiled_manifest");
  write(d, good());
  const CompiledManifest m = read_compiled_manifest(d.str());
  CHECK_NOTHROW(check_compiled_target(m, "2.15.0", "cpu"));  // the CUDA-build suffix is no release
  CHECK_THAT(error_text([&] { check_compiled_target(m, "2.14.1", "cpu"); }),
             Catch::Contains("was compiled by PyTorch 2.15.0+cu132, the worker runs LibTorch 2.14.1"));
  CHECK_THAT(
      error_text([&] { check_compiled_target(m, "2.15.0", "cuda:0"); }),
      Catch::Contains("was compiled for device 'cpu', the job trains on 'cuda:0'") && Catch::Contains("--device cuda"));
}
