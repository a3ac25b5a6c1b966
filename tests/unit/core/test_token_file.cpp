// Token-file layouts (lib/core/token_file.cpp): llm.c's header told from nanoGPT's raw ids, the
// size checked against the header, and every refusal naming the file and the setting.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "lib/core/error.hpp"
#include "lib/core/token_file.hpp"
#include "error_text.hpp"
#include "temp_dir.hpp"
#include "token_bytes.hpp"

using namespace mtrain::testing;
namespace fs = std::filesystem;

TEST_CASE("token files: the header tells llm.c from nanoGPT", "[core][token_file]") {
  TempDir dir("mtrain_token_file");
  const auto ids = ramp(1000, 50000);
  const auto raw = mtrain::read_token_file_layout(
      dir.write("raw.bin", nanogpt_bytes(ids)), "data.path");
  CHECK_FALSE(raw.llmc);
  CHECK(raw.header_bytes == 0);
  CHECK(raw.token_bytes == 2);
  CHECK(raw.count == 1000);
  CHECK(raw.describe() == "nanoGPT raw uint16");

  const auto u16 = mtrain::read_token_file_layout(
      dir.write("u16.bin", llmc_bytes(ids, 2)), "data.path");
  CHECK(u16.llmc);
  CHECK(u16.header_bytes == 1024);
  CHECK(u16.token_bytes == 2);
  CHECK(u16.count == 1000);

  const auto u32 = mtrain::read_token_file_layout(
      dir.write("u32.bin", llmc_bytes(ramp(10, 100000), 4)), "data.path");
  CHECK(u32.llmc);
  CHECK(u32.token_bytes == 4);
  CHECK(u32.count == 10);
  CHECK(u32.describe() == "llm.c uint32, magic 20240801 version 7");

  // Shorter than a header: raw uint16 whatever its first bytes (two ids here).
  std::string tiny;
  append_le(tiny, mtrain::kLlmcMagicU16, 4);
  const auto small = mtrain::read_token_file_layout(
      dir.write("tiny.bin", tiny), "data.path");
  CHECK_FALSE(small.llmc);
  CHECK(small.count == 2);
}

TEST_CASE("token files: sizes, versions and paths that do not fit are named", "[core][token_file]") {
  TempDir dir("mtrain_token_file");
  const auto ids = ramp(1000, 50000);
  auto layout = [&](const fs::path& p) { mtrain::read_token_file_layout(p.string(), "data.path"); };

  // The header promises 1200 tokens, the file holds 1000: expected vs actual bytes.
  const auto short_file = dir.write("short.bin", llmc_bytes(ids, 2, 1200));
  const std::string truncated = error_text([&] { layout(short_file); });
  CHECK_THAT(truncated, Catch::Contains("short.bin") && Catch::Contains("data.path") &&
                            Catch::Contains("3024 bytes") && Catch::Contains("3424") &&
                            Catch::Contains("truncated"));
  const auto long_file = dir.write("long.bin", llmc_bytes(ids, 4, 900));
  CHECK_THAT(error_text([&] { layout(long_file); }),
             Catch::Contains("long.bin") && Catch::Contains("4624") && Catch::Contains("5024"));

  std::string bad_version = llmc_bytes(ids, 2);
  bad_version[4] = 7;  // magic 20240520 with uint32's version
  const auto bv = dir.write("version.bin", bad_version);
  CHECK_THAT(error_text([&] { layout(bv); }),
             Catch::Contains("version.bin") && Catch::Contains("version 7") &&
                 Catch::Contains("20240520"));

  const auto odd = dir.write("odd.bin", nanogpt_bytes(ids) + "x");
  CHECK_THAT(error_text([&] { layout(odd); }), Catch::Contains("odd.bin") && Catch::Contains("odd"));

  CHECK_THAT(error_text([&] { layout(dir.path / "missing.bin"); }),
             Catch::Contains("missing.bin") && Catch::Contains("data.path"));
  CHECK_THAT(error_text([&] { layout(dir.path); }), Catch::Contains("not a regular file"));
  CHECK_THAT(error_text([&] { mtrain::read_token_file_layout("", "data.val_path"); }),
             Catch::Contains("data.val_path"));
  try {
    layout(short_file);
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == 2);
  }
}

TEST_CASE("token files: the layout from the first bytes and the size alone", "[core][token_file]") {
  const std::string u32 = llmc_bytes(ramp(3, 100000), 4);
  const auto* head = reinterpret_cast<const unsigned char*>(u32.data());
  const auto l = mtrain::token_file_layout("x.bin", "data.path", head, 1024, u32.size());
  CHECK(l.llmc);
  CHECK(l.token_bytes == 4);
  CHECK(l.count == 3);
  // The same header with one token more or less than it promises.
  CHECK_THAT(error_text([&] { mtrain::token_file_layout("x.bin", "data.path", head, 1024, u32.size() + 4); }),
             Catch::Contains("x.bin") && Catch::Contains("data.path"));
  CHECK_THAT(error_text([&] { mtrain::token_file_layout("x.bin", "data.path", head, 1024, u32.size() - 4); }),
             Catch::Contains("truncated"));
  // An empty file is a raw one of no tokens.
  CHECK(mtrain::token_file_layout("e.bin", "data.path", head, 0, 0).count == 0);
}
