// safetensors: the streamed writer and the validating reader round-trip every dtype; the header
// is laid out as the spec says; damaged files fail with one paragraph naming the file.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "lib/core/error.hpp"
#include "lib/trainer/checkpoint/durable_file.hpp"
#include "lib/trainer/checkpoint/safetensors.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;

namespace {

void write_file(const fs::path& p, const std::vector<std::pair<std::string, at::Tensor>>& ts,
                const std::map<std::string, std::string>& meta = {}) {
  std::vector<ArchiveEntry> entries;
  for (const auto& [n, t] : ts) entries.push_back({n, t.scalar_type(), t.sizes().vec(), [t] { return t; }});
  DurableWriter out(p.string());
  write_safetensors(out, entries, meta);
  out.commit();
}

// A file from raw parts: the header text as given (no padding added) and `data` bytes.
void raw_file(const fs::path& p, const std::string& header, const std::string& data, int64_t len = -1) {
  std::ofstream f(p, std::ios::binary);
  const uint64_t n = len < 0 ? header.size() : static_cast<uint64_t>(len);
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xff));
  f << header << data;
}

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("safetensors round-trips every dtype, bit for bit", "[checkpoint][safetensors]") {
  const auto d = fresh_dir("safetensors_roundtrip");
  at::manual_seed(3);
  std::vector<std::pair<std::string, at::Tensor>> ts = {
      {"f32", at::randn({3, 5})},
      {"f64", at::randn({4}, at::kDouble)},
      {"f16", at::randn({2, 3}).to(at::kHalf)},
      {"bf16", at::randn({7}).to(at::kBFloat16)},
      {"i64", at::randint(-1000000, 1000000, {2, 2}, at::kLong)},
      {"i32", at::randint(-1000, 1000, {5}, at::kInt)},
      {"i16", at::randint(-1000, 1000, {3}, at::kShort)},
      {"i8", at::randint(-100, 100, {3}, at::kChar)},
      {"u8", at::randint(0, 255, {6}, at::kByte)},
      {"bool", at::randint(0, 2, {4}).to(at::kBool)},
      {"scalar", at::full({}, 2.5)},
      {"empty", at::empty({0, 3})},
      {"block.0.attn.weight", at::randn({2, 3, 4}).transpose(0, 2)},  // non-contiguous input
  };
  write_file(d / "w.safetensors", ts, {{"step", "7"}, {"format", "pt"}});

  SafetensorsReader r((d / "w.safetensors").string());
  REQUIRE(r.tensors().size() == ts.size());
  CHECK(r.metadata().at("step") == "7");
  CHECK(r.metadata().at("format") == "pt");
  for (size_t i = 0; i < ts.size(); ++i) {
    const auto& [name, t] = ts[i];
    INFO(name);
    CHECK(r.tensors()[i].name == name);  // header order is the write order
    const SafetensorsTensor* m = r.find(name);
    REQUIRE(m != nullptr);
    CHECK(m->dtype == t.scalar_type());
    CHECK(m->shape == t.sizes().vec());
    const at::Tensor back = r.read(name, 0, t.numel());
    CHECK(at::equal(back.view(t.sizes()), t.contiguous()));
  }
  // A range read is just those elements.
  CHECK(at::equal(r.read("f32", 4, 6), ts[0].second.reshape({-1}).narrow(0, 4, 6)));
  CHECK_THROWS_WITH(r.read("f32", 10, 6), Catch::Contains("outside"));

  // The layout the spec fixes: little-endian length, JSON, data 8-byte aligned.
  const std::string bytes = read_all(d / "w.safetensors");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  CHECK((8 + n) % 8 == 0);
  const auto h = nlohmann::json::parse(bytes.substr(8, n));
  CHECK(h["__metadata__"]["step"] == "7");
  CHECK(h["f32"]["dtype"] == "F32");
  CHECK(h["bf16"]["dtype"] == "BF16");
  CHECK(h["u8"]["dtype"] == "U8");
  CHECK(h["f32"]["shape"] == nlohmann::json::array({3, 5}));
  CHECK(h["f32"]["data_offsets"] == nlohmann::json::array({0, 60}));
  CHECK(h["f64"]["data_offsets"] == nlohmann::json::array({60, 92}));
  // The f32 bytes sit first in the buffer, raw.
  CHECK(std::memcmp(bytes.data() + 8 + n, ts[0].second.data_ptr(), 60) == 0);
}

TEST_CASE("safetensors reader rejects damaged headers, naming the file", "[checkpoint][safetensors]") {
  const auto d = fresh_dir("safetensors_bad");
  const auto p = d / "bad.safetensors";
  auto expect_error = [&](const std::string& fragment) {
    INFO(fragment);
    try {
      SafetensorsReader r(p.string());
      FAIL("no error");
    } catch (const mtrain::Error& e) {
      CHECK_THAT(e.message(), Catch::Contains(p.string()) && Catch::Contains(fragment));
      CHECK(e.exit_code() == 2);
    }
  };
  const std::string f8(8, '\0');  // 8 bytes of data: two F32 elements
  raw_file(p, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f8);
  { SafetensorsReader ok(p.string()); CHECK(ok.tensors().size() == 1); }

  { std::ofstream f(p, std::ios::binary); f << "abc"; }
  expect_error("fewer than the 8-byte header length");
  raw_file(p, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f8, 1000);
  expect_error("runs past the end of the file");
  raw_file(p, "{not json", f8);
  expect_error("not JSON");
  raw_file(p, R"([1,2])", f8);
  expect_error("not a JSON object");
  raw_file(p, R"({"a":{"dtype":"F32","shape":[2]}})", f8);
  expect_error("lacks dtype, shape or data_offsets");
  raw_file(p, R"({"a":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", f8);
  expect_error("'F8_E4M3' is not supported");
  raw_file(p, R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f8);
  expect_error("needs 12 bytes, data_offsets give 8");
  raw_file(p, R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", f8);
  expect_error("outside the 8 bytes of data");
  raw_file(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})", f8);
  expect_error("they overlap");
  raw_file(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f8);
  expect_error("a hole");
  raw_file(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f8);
  expect_error("trailing bytes");
  raw_file(p, R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f8);
  expect_error("negative");
  raw_file(p, R"({"__metadata__":{"step":7},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f8);
  expect_error("__metadata__ value 'step' is not a string");
  expect_error("not a valid safetensors file");
}
