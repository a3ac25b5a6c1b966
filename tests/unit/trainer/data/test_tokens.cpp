// The tokens dataset over the layouts of lib/core/token_file.hpp (tested in
// tests/unit/core/test_token_file.cpp): windows cut like the text dataset's, ids checked against
// the vocabulary by position, and a mapping whose resident pages do not pile up as it is read.
#include "lib/core/error.hpp"
#include "lib/core/token_file.hpp"
#include "lib/trainer/data/dataset.hpp"
#include "lib/trainer/loop/train_job.hpp"

#include <catch2/catch.hpp>

#include "data_files.hpp"
#include "token_bytes.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;
using mtrain::testing::llmc_bytes;
using mtrain::testing::nanogpt_bytes;
using mtrain::testing::ramp;
namespace fs = std::filesystem;

namespace {

ModelSpec lm(int64_t block, int64_t vocab) {
  ModelSpec m;
  m.name = mtrain::config::ModelName::Gpt;
  m.block_size = block;
  m.vocab_size = vocab;
  return m;
}

DataSpec tokens_at(const fs::path& p, double val_fraction = 0.1) {
  DataSpec d;
  d.name = mtrain::config::DataName::Tokens;
  d.path = p.string();
  d.val_fraction = val_fraction;
  return d;
}

// Resident pages of mapped files in this process (kB), from /proc/self/status.
int64_t rss_file_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("RssFile:", 0) == 0) return std::stoll(line.substr(8));
  return -1;
}

}  // namespace

TEST_CASE("tokens: windows shift by one, split by val_fraction at the tail", "[tokens]") {
  TempDir dir;
  const auto ids = ramp(1000, 50000);
  const auto d = tokens_at(write_file(dir.path / "t.bin", nanogpt_bytes(ids)), 0.2);
  const ModelSpec m = lm(16, 50304);
  auto train = make_dataset(d, m, Split::Train, 0);
  auto val = make_dataset(d, m, Split::Val, 0);
  CHECK(train->size() == (800 - 1) / 16);  // 49 windows of 17 tokens in the first 800
  CHECK(val->size() == (200 - 1) / 16);    // 12 in the 200-token tail
  const Batch b = train->batch({0, 3, 48});
  REQUIRE(b.input.sizes() == at::IntArrayRef{3, 16});
  REQUIRE(b.target.sizes() == at::IntArrayRef{3, 16});
  CHECK(b.input.scalar_type() == at::kLong);
  CHECK(b.target.scalar_type() == at::kLong);
  for (int s = 0; s < 3; ++s) {
    const int64_t start = std::vector<int64_t>{0, 48, 768}[static_cast<size_t>(s)];
    for (int t = 0; t < 16; ++t) {
      CHECK(b.input[s][t].item<int64_t>() == ids[static_cast<size_t>(start + t)]);
      CHECK(b.target[s][t].item<int64_t>() == ids[static_cast<size_t>(start + t + 1)]);
    }
  }
  CHECK(val->batch({0}).input[0][0].item<int64_t>() == ids[800]);  // val starts at the tail
  CHECK(val->batch({11}).target[0][15].item<int64_t>() == ids[800 + 11 * 16 + 16]);
  CHECK_THROWS_AS(train->batch({49}), mtrain::Error);

  auto no_val = tokens_at(d.path, 0);
  CHECK(make_dataset(no_val, m, Split::Val, 0)->size() == 0);
  CHECK(make_dataset(no_val, m, Split::Train, 0)->size() == 999 / 16);
  auto tiny_val = tokens_at(d.path, 0.01);  // a 10-token tail cannot hold one 17-token window
  CHECK_THAT(error_text([&] { make_dataset(tiny_val, m, Split::Val, 0); }),
             Catch::Contains("data.val_fraction") && Catch::Contains("17"));
}

TEST_CASE("tokens: the three layouts of the same ids give the same batches", "[tokens]") {
  TempDir dir;
  const auto ids = ramp(5000, 60000);
  const ModelSpec m = lm(32, 60000);
  const std::vector<int64_t> order{0, 17, 5, 130, 99};
  std::vector<Batch> got;
  for (const auto& [name, bytes] : {std::pair<std::string, std::string>{"raw.bin", nanogpt_bytes(ids)},
                                    {"u16.bin", llmc_bytes(ids, 2)},
                                    {"u32.bin", llmc_bytes(ids, 4)}}) {
    auto train = make_dataset(tokens_at(write_file(dir.path / name, bytes)), m, Split::Train, 0);
    CHECK(train->size() == (4500 - 1) / 32);
    got.push_back(train->batch(order));
  }
  for (size_t k = 1; k < got.size(); ++k) {
    CHECK(got[k].input.equal(got[0].input));
    CHECK(got[k].target.equal(got[0].target));
  }
  CHECK(got[0].input[3][0].item<int64_t>() == ids[130 * 32]);
}

TEST_CASE("tokens: data.val_path is the validation file, data.path is all training", "[tokens]") {
  TempDir dir;
  const auto train_ids = ramp(2000, 1000);
  std::vector<uint32_t> val_ids(300, 0);
  for (size_t i = 0; i < val_ids.size(); ++i) val_ids[i] = static_cast<uint32_t>(999 - i % 50);
  DataSpec d = tokens_at(write_file(dir.path / "train.bin", llmc_bytes(train_ids, 4)), 0.5);
  d.val_path = write_file(dir.path / "val.bin", nanogpt_bytes(val_ids)).string();
  const ModelSpec m = lm(8, 1000);
  auto train = make_dataset(d, m, Split::Train, 0);
  auto val = make_dataset(d, m, Split::Val, 0);
  CHECK(train->size() == 1999 / 8);  // val_fraction is not used
  CHECK(val->size() == 299 / 8);
  CHECK(val->batch({1}).input[0][0].item<int64_t>() == val_ids[8]);

  d.val_path = (dir.path / "nope.bin").string();
  CHECK_THAT(error_text([&] { make_dataset(d, m, Split::Val, 0); }),
             Catch::Contains("data.val_path") && Catch::Contains("nope.bin"));
}

TEST_CASE("tokens: an id at or above model.vocab_size is named by its position", "[tokens]") {
  TempDir dir;
  auto ids = ramp(1000, 500);
  ids[530] = 500;  // window 33 of block 16 covers tokens 528..544
  const auto p = write_file(dir.path / "ids.bin", llmc_bytes(ids, 2));
  const ModelSpec m = lm(16, 500);
  auto train = make_dataset(tokens_at(p, 0), m, Split::Train, 0);
  CHECK_NOTHROW(train->batch({0, 1, 32, 34}));
  try {
    train->batch({0, 33});
    FAIL("no error for token id 500 with vocab 500");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.paragraph(), Catch::Contains("ids.bin") && Catch::Contains("token id 500") &&
                                  Catch::Contains("position 530") &&
                                  Catch::Contains("byte offset 2084") &&
                                  Catch::Contains("model.vocab_size is 500"));
  }
  // An id that is only a window's last target is checked too: 544 ends window 33.
  ids[530] = 1;
  ids[544] = 700;
  const auto q = write_file(dir.path / "last.bin", nanogpt_bytes(ids));
  auto last = make_dataset(tokens_at(q, 0), m, Split::Train, 0);
  CHECK_THAT(error_text([&] { last->batch({33}); }), Catch::Contains("position 544"));
  CHECK_NOTHROW(make_dataset(tokens_at(p, 0), lm(16, 501), Split::Train, 0)->batch({33}));
}

TEST_CASE("tokens: too short, or not a language model", "[tokens]") {
  TempDir dir;
  const auto p = write_file(dir.path / "few.bin", nanogpt_bytes(ramp(16, 100)));
  CHECK_THAT(error_text([&] { make_dataset(tokens_at(p, 0), lm(16, 256), Split::Train, 0); }),
             Catch::Contains("few.bin") && Catch::Contains("16 tokens") && Catch::Contains("17"));
  ModelSpec mlp;
  mlp.name = mtrain::config::ModelName::Mlp;
  CHECK_THAT(error_text([&] { make_dataset(tokens_at(p, 0), mlp, Split::Train, 0); }),
             Catch::Contains("language model") && Catch::Contains("data.name"));
}

TEST_CASE("tokens: data.name and data.val_path come from the job", "[tokens]") {
  auto job = nlohmann::json::parse(
      R"({"model": {"name": "gpt"}, "data": {"name": "tokens", "path": "a.bin", "val_path": "b.bin"}})");
  const DataSpec d = train_job_from_json(job).data;
  CHECK(d.name == mtrain::config::DataName::Tokens);
  CHECK(d.path == "a.bin");
  CHECK(d.val_path == "b.bin");
}

TEST_CASE("tokens: reading a mapped file does not keep its pages resident", "[tokens]") {
  REQUIRE(rss_file_kb() >= 0);  // Linux: /proc/self/status has RssFile
  TempDir dir;
  // 64 MiB of uint16 ids, written in chunks (the test itself must not hold the file either).
  const int64_t count = 32LL << 20;
  const fs::path p = dir.path / "big.bin";
  {
    std::ofstream out(p, std::ios::binary);
    std::vector<uint16_t> chunk(1 << 20);
    for (int64_t done = 0; done < count; done += static_cast<int64_t>(chunk.size())) {
      for (size_t i = 0; i < chunk.size(); ++i)
        chunk[i] = static_cast<uint16_t>((done + static_cast<int64_t>(i)) % 50000);
      out.write(reinterpret_cast<const char*>(chunk.data()),
                static_cast<std::streamsize>(chunk.size() * 2));
    }
  }
  const ModelSpec m = lm(1024, 50304);
  auto train = make_dataset(tokens_at(p, 0), m, Split::Train, 0);
  const int64_t before = rss_file_kb();
  int64_t checksum = 0;
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < train->size(); ++i) {
    idx.push_back(i);
    if (idx.size() == 64 || i + 1 == train->size()) {
      checksum += train->batch(idx).input.sum().item<int64_t>();
      idx.clear();
    }
  }
  const int64_t grown = rss_file_kb() - before;
  INFO("RssFile grew by " << grown << " kB reading 64 MiB of tokens");
  CHECK(checksum > 0);
  CHECK(grown < 8 * 1024);  // without releasing the pages it is ~64 MiB
}

TEST_CASE("tokens: a file truncated while mapped dies of SIGBUS naming the file (issue 29)", "[tokens][hostile]") {
  TempDir dir;
  const fs::path bin = dir.path / "train.bin";
  {
    std::ofstream out(bin, std::ios::binary);
    out << nanogpt_bytes(ramp(1 << 20, 50000));  // 2 MiB: many pages past the cut
  }
  const fs::path err = dir.path / "stderr.txt";
  const fs::path error_file = dir.path / "error.json";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The rank: stderr to a file, an error file for its launcher, the mapping, then a truncation
    // under it (another process rewriting the corpus) and a read past the new end.
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 2);
    ::setenv("TORCHELASTIC_ERROR_FILE", error_file.c_str(), 1);
    ::setenv("RANK", "3", 1);
    auto ds = make_dataset(tokens_at(bin, 0), lm(64, 50257), Split::Train, 1);
    fs::resize_file(bin, 4096);
    ds->batch({ds->size() - 1});
    ::_exit(0);  // not reached: the read faults
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGBUS);  // dies of the signal as before: only the report is new
  std::ifstream e(err);
  const std::string text((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("SIGBUS reading the token file '" + bin.string() + "' (data.path)") &&
                       Catch::Contains("truncated"));
  std::ifstream ef(error_file);
  const std::string record((std::istreambuf_iterator<char>(ef)), std::istreambuf_iterator<char>());
  CHECK_THAT(record, Catch::Contains(bin.string()) && Catch::Contains("\"rank\":3"));
}
