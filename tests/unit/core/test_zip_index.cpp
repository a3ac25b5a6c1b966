#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

#include <zlib.h>

#include "error_text.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/core/zip_index.hpp"
#include "temp_dir.hpp"
#include "zip_bytes.hpp"

using namespace mtrain;
using mtrain::testing::TempDir;
using mtrain::testing::zip_bytes;

namespace {
std::string write(const TempDir& d, const std::string& name, const std::string& bytes) {
  const std::string p = d.str() + "/" + name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}
std::string refusal(const std::string& path) {
  try {
    ZipIndex z(path, "TorchScript model");
  } catch (const Error& e) {
    CHECK(e.exit_code() == kExitUsage);
    return e.paragraph();
  }
  return "";
}
}  // namespace

TEST_CASE("zip index: stored records are listed and read back", "[zip_index]") {
  TempDir d;
  const auto p = write(d, "m.pt", zip_bytes({{"m/data.pkl", "PKL"}, {"m/code/__torch__.py", "def f(): pass\n"}, {"m/version", "3\n"}}));
  ZipIndex z(p, "TorchScript model");
  REQUIRE(z.entries().size() == 3);
  REQUIRE(z.find("m/version") != nullptr);
  CHECK(z.read(*z.find("m/version")) == "3\n");
  CHECK(z.read(*z.find("m/code/__torch__.py")) == "def f(): pass\n");
  CHECK(z.find("m/absent") == nullptr);
}

TEST_CASE("zip index: files that are not zips, or lie, are refused naming the file", "[zip_index]") {
  TempDir d;
  CHECK_THAT(refusal(write(d, "empty.pt", "")), Catch::Contains("empty.pt") && Catch::Contains("too short"));
  CHECK_THAT(refusal(write(d, "text.pt", std::string(100, 'x'))), Catch::Contains("no end-of-directory record"));
  std::string cut = zip_bytes({{"m/data.pkl", std::string(1000, 'p')}});
  CHECK_THAT(refusal(write(d, "cut.pt", cut.substr(0, 500) + cut.substr(cut.size() - 22))),
             Catch::Contains("cut.pt") && (Catch::Contains("damaged") || Catch::Contains("past")));
  CHECK_THAT(refusal(write(d, "lies.pt", zip_bytes({{"m/data.pkl", "abc", 0, 1 << 30}}))),
             Catch::Contains("beyond the file"));
  CHECK_THAT(refusal(d.str()), Catch::Contains("not a regular file") && Catch::Contains("a folder"));
  const std::string fifo = d.str() + "/fifo.pt";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(refusal(fifo), Catch::Contains("a FIFO"));  // and it did not block
  CHECK_THAT(refusal(d.str() + "/missing.pt"), Catch::Contains("cannot open") && Catch::Contains("missing.pt"));
}

TEST_CASE("zip index: deflated records inflate to their declared size, never more, never raw", "[zip_index]") {
  TempDir d;
  const std::string text(5000, 'a');
  std::string deflated(compressBound(text.size()), '\0');
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(deflated.data());
  z.avail_out = static_cast<uInt>(deflated.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  deflated.resize(z.total_out);
  deflateEnd(&z);
  auto record = [&](int64_t declared) {
    mtrain::testing::ZipRecord r{"m/code/x.py", deflated, 8, declared};
    r.compressed_size = static_cast<int64_t>(deflated.size());
    return r;
  };
  ZipIndex ok(write(d, "ok.pt", zip_bytes({record(5000)})), "TorchScript model");
  CHECK(ok.read(ok.entries().front()) == text);
  // A bomb: the stream holds more than the directory declares; inflation stops at the bound.
  ZipIndex bomb(write(d, "bomb.pt", zip_bytes({record(100)})), "TorchScript model");
  CHECK_THAT(testing::error_text([&] { (void)bomb.read(bomb.entries().front()); }),
             Catch::Contains("bomb.pt") && Catch::Contains("more data than declared"));
  // An unknown method is named.
  ZipIndex bz(write(d, "bz.pt", zip_bytes({{"m/code/x.py", "xyz", 12}})), "TorchScript model");
  CHECK_THAT(testing::error_text([&] { (void)bz.read(bz.entries().front()); }), Catch::Contains("zip method 12"));
}

TEST_CASE("zip index: an entry count beyond the limit is refused before any allocation", "[zip_index]") {
  TempDir d;
  std::string z = zip_bytes({{"a", "1"}});
  // Patch the end record's two counts to 65000 with the directory size unchanged.
  const size_t eocd = z.size() - 22;
  z[eocd + 8] = z[eocd + 10] = static_cast<char>(0xE8);
  z[eocd + 9] = z[eocd + 11] = static_cast<char>(0xFD);
  CHECK_THAT(refusal(write(d, "many.pt", z)), Catch::Contains("cannot hold 65000 entries"));
}
