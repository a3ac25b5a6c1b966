#include "lib/core/error.hpp"
#include "lib/trainer/data/dataset.hpp"
#include "lib/trainer/loop/train_job.hpp"
#include "lib/trainer/data/sampler.hpp"

#include <catch2/catch.hpp>

#include "data_files.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;
namespace fs = std::filesystem;

namespace {

ModelSpec gpt_spec(int64_t block) {
  ModelSpec m;
  m.name = mtrain::config::ModelName::Gpt;
  m.block_size = block;
  return m;
}

std::vector<int64_t> range(int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = i;
  return out;
}

}  // namespace

TEST_CASE("data: spec from the job resolves auto by model", "[data]") {
  auto job = nlohmann::json::parse(R"({"model": {"name": "gpt"}, "data": {"val_fraction": 0.2}})");
  DataSpec d = train_job_from_json(job).data;
  CHECK(d.name == mtrain::config::DataName::Text);
  CHECK(d.val_fraction == Approx(0.2));
  CHECK(d.num_samples == 4096);
  job["model"]["name"] = "resnet18";
  CHECK(train_job_from_json(job).data.name == mtrain::config::DataName::Synthetic);
  job["data"]["name"] = "cifar10";
  CHECK(train_job_from_json(job).data.name == mtrain::config::DataName::Cifar10);
}

TEST_CASE("text: windows shift by one, split by val_fraction at the tail", "[data]") {
  TempDir dir;
  std::string bytes;
  for (int i = 0; i < 1000; ++i) bytes.push_back(static_cast<char>(i % 251));
  write_file(dir.path / "t.txt", bytes);
  DataSpec d;
  d.name = mtrain::config::DataName::Text;
  d.path = (dir.path / "t.txt").string();
  d.val_fraction = 0.2;
  const ModelSpec m = gpt_spec(16);
  auto train = make_dataset(d, m, Split::Train, 0);
  auto val = make_dataset(d, m, Split::Val, 0);
  CHECK(train->size() == (800 - 1) / 16);  // 49 windows of 17 bytes in the first 800 bytes
  CHECK(val->size() == (200 - 1) / 16);    // 12 in the 200-byte tail
  const Batch b = train->batch({0, 3, 48});
  REQUIRE(b.input.sizes() == at::IntArrayRef{3, 16});
  REQUIRE(b.target.sizes() == at::IntArrayRef{3, 16});
  CHECK(b.input.scalar_type() == at::kLong);
  CHECK(b.input[1][0].item<int64_t>() == 48);       // window 3 starts at byte 48
  CHECK(b.input[2][15].item<int64_t>() == (48 * 16 + 15) % 251);
  CHECK(b.target.slice(1, 0, 15).equal(b.input.slice(1, 1, 16)));  // target = input shifted
  CHECK(b.target[2][15].item<int64_t>() == (48 * 16 + 16) % 251);
  const Batch v = val->batch({0});
  CHECK(v.input[0][0].item<int64_t>() == 800 % 251);  // val starts at the tail
  CHECK_THROWS_AS(train->batch({49}), mtrain::Error);

  d.val_fraction = 0;
  CHECK(make_dataset(d, m, Split::Val, 0)->size() == 0);
  CHECK(make_dataset(d, m, Split::Train, 0)->size() == 999 / 16);
  d.val_fraction = 0.01;  // a 10-byte tail cannot hold one 17-byte window
  CHECK_THROWS_AS(make_dataset(d, m, Split::Val, 0), mtrain::Error);
}

TEST_CASE("text: errors name the file and what was expected", "[data]") {
  TempDir dir;
  DataSpec d;
  d.name = mtrain::config::DataName::Text;
  d.path = (dir.path / "missing.txt").string();
  const std::string missing = error_text([&] { make_dataset(d, gpt_spec(16), Split::Train, 0); });
  CHECK_THAT(missing, Catch::Contains("missing.txt"));
  write_file(dir.path / "short.txt", "tiny");
  d.path = (dir.path / "short.txt").string();
  const std::string short_text = error_text([&] { make_dataset(d, gpt_spec(16), Split::Train, 0); });
  CHECK_THAT(short_text, Catch::Contains("short.txt") && Catch::Contains("17"));
  ModelSpec mlp;
  mlp.name = mtrain::config::ModelName::Mlp;
  CHECK_THROWS_AS(make_dataset(d, mlp, Split::Train, 0), mtrain::Error);
}

TEST_CASE("text: the embedded corpus is prose of a useful size", "[data]") {
  const std::string& c = embedded_corpus();
  CHECK(c.size() > 30000);
  CHECK(c.size() < 60000);
  CHECK(c.find("processor") != std::string::npos);
  DataSpec d;
  d.name = mtrain::config::DataName::Text;  // no path: the embedded corpus
  auto train = make_dataset(d, gpt_spec(64), Split::Train, 0);
  auto val = make_dataset(d, gpt_spec(64), Split::Val, 0);
  const auto val_bytes = static_cast<int64_t>(std::floor(static_cast<double>(c.size()) * 0.1));
  CHECK(train->size() == (static_cast<int64_t>(c.size()) - val_bytes - 1) / 64);
  CHECK(val->size() == (val_bytes - 1) / 64);
  const Batch b = train->batch({0});
  CHECK(b.input[0][0].item<int64_t>() == static_cast<unsigned char>(c[0]));
}

TEST_CASE("cifar10: reads generated batches, errors on truncated ones", "[data]") {
  TempDir dir;
  const int64_t rec = 3073;
  auto make_batch = [&](const std::string& name, int records, int label_base) {
    std::string bytes;
    for (int r = 0; r < records; ++r) {
      bytes.push_back(static_cast<char>((label_base + r) % 10));
      for (int k = 0; k < 3072; ++k) bytes.push_back(static_cast<char>((r * 7 + k) % 256));
    }
    write_file(dir.path / name, bytes);
  };
  for (int b = 1; b <= 5; ++b) make_batch("data_batch_" + std::to_string(b) + ".bin", 2, b);
  make_batch("test_batch.bin", 3, 0);
  DataSpec d;
  d.name = mtrain::config::DataName::Cifar10;
  d.path = dir.path.string();
  ModelSpec m;
  m.name = mtrain::config::ModelName::Resnet18;
  auto train = make_dataset(d, m, Split::Train, 0);
  auto val = make_dataset(d, m, Split::Val, 0);
  CHECK(train->size() == 10);
  CHECK(val->size() == 3);
  const Batch b = train->batch({0, 3});
  REQUIRE(b.input.sizes() == at::IntArrayRef{2, 3, 32, 32});
  CHECK(b.target[0].item<int64_t>() == 1);  // data_batch_1 record 0
  CHECK(b.target[1].item<int64_t>() == 3);  // data_batch_2 record 1: (2 + 1) % 10
  // Pixel 0 of record 0 is byte 0 → (0 - mean_r) / std_r; green pixel (0, 1) is byte 1025 % 256 = 1.
  CHECK(b.input[0][0][0][0].item<float>() == Approx((0.0 - 0.4914) / 0.2470).epsilon(1e-4));
  CHECK(b.input[0][1][0][1].item<float>() == Approx((1.0 / 255 - 0.4822) / 0.2435).epsilon(1e-4));
  CHECK(val->batch({2}).target[0].item<int64_t>() == 2);

  ModelSpec mlp;
  mlp.name = mtrain::config::ModelName::Mlp;
  mlp.input_dim = 3072;
  CHECK(make_dataset(d, mlp, Split::Val, 0)->batch({0}).input.sizes() == at::IntArrayRef{1, 3072});
  mlp.input_dim = 32;
  CHECK_THROWS_AS(make_dataset(d, mlp, Split::Val, 0), mtrain::Error);

  // Truncate one file: the error names it and the record size.
  std::string truncated(static_cast<size_t>(rec + 100), '\0');
  write_file(dir.path / "data_batch_4.bin", truncated);
  const std::string err = error_text([&] { make_dataset(d, m, Split::Train, 0); });
  CHECK_THAT(err, Catch::Contains("data_batch_4.bin") && Catch::Contains("3073"));
  fs::remove(dir.path / "test_batch.bin");
  CHECK_THAT(error_text([&] { make_dataset(d, m, Split::Val, 0); }),
             Catch::Contains("test_batch.bin"));
}

TEST_CASE("synthetic: deterministic per index, shapes per model, disjoint val", "[data]") {
  DataSpec d;
  d.name = mtrain::config::DataName::Synthetic;
  d.num_samples = 100;
  d.val_fraction = 0.1;
  ModelSpec mlp;
  mlp.name = mtrain::config::ModelName::Mlp;
  mlp.input_dim = 12;
  mlp.num_classes = 5;
  auto a = make_dataset(d, mlp, Split::Train, 4);
  auto b = make_dataset(d, mlp, Split::Train, 4);
  auto v = make_dataset(d, mlp, Split::Val, 4);
  CHECK(a->size() == 100);
  CHECK(v->size() == 10);
  const Batch x = a->batch({5, 9, 5});
  CHECK(x.input.sizes() == at::IntArrayRef{3, 12});
  CHECK(x.input[0].equal(x.input[2]));                    // a sample is a function of its index
  CHECK(x.input[1].equal(b->batch({9}).input[0]));        // and of nothing else
  CHECK_FALSE(x.input[0].equal(v->batch({5}).input[0]));  // val samples are other samples
  CHECK_FALSE(x.input[0].equal(make_dataset(d, mlp, Split::Train, 5)->batch({5}).input[0]));
  const Batch all = a->batch(range(100));
  CHECK(all.target.min().item<int64_t>() >= 0);
  CHECK(all.target.max().item<int64_t>() < 5);
  CHECK(at::bincount(all.target).gt(0).sum().item<int64_t>() >= 4);  // the teacher uses (nearly) every class

  ModelSpec r;
  r.name = mtrain::config::ModelName::Resnet50;
  const Batch img = make_dataset(d, r, Split::Train, 0)->batch({0, 1});
  CHECK(img.input.sizes() == at::IntArrayRef{2, 3, 32, 32});
  CHECK(img.target.sizes() == at::IntArrayRef{2});

  ModelSpec g = gpt_spec(8);
  g.vocab_size = 50;
  const Batch tok = make_dataset(d, g, Split::Train, 0)->batch({0, 1});
  CHECK(tok.input.sizes() == at::IntArrayRef{2, 8});
  CHECK(tok.target.slice(1, 0, 7).equal(tok.input.slice(1, 1, 8)));
  CHECK(tok.input.max().item<int64_t>() < 50);
}
