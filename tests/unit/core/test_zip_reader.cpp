#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>

#include "error_text.hpp"
#include "lib/core/error.hpp"
#include "lib/core/zip_reader.hpp"
#include "temp_dir.hpp"
#include "zip_bytes.hpp"

using namespace mtrain;
using mtrain::testing::deflated;
using mtrain::testing::error_text;
using mtrain::testing::TempDir;
using mtrain::testing::zip_bytes;
using Rec = mtrain::testing::ZipRecord;

namespace {
std::string write(const TempDir& d, const std::string& name, const std::string& bytes) {
  const std::string p = d.str() + "/" + name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}
std::string refusal(const std::string& path) {
  try {
    ZipReader z(path, kTorchScriptZip);
  } catch (const Error& e) {
    CHECK(e.exit_code() == kExitUsage);
    return e.paragraph();
  }
  return "";
}
}  // namespace

TEST_CASE("zip reader: stored records are listed under their folder and read back", "[zip_reader]") {
  TempDir d;
  const auto p = write(d, "m.pt", zip_bytes({{"m/data.pkl", "PKL"}, {"m/code/__torch__.py", "def f(): pass\n"}, {"m/version", "3\n"}}));
  ZipReader z(p, kTorchScriptZip);
  CHECK(z.prefix() == "m/");
  REQUIRE(z.records().size() == 3);
  REQUIRE(z.find("version") != nullptr);
  CHECK(z.read_all("version", 100) == "3\n");
  CHECK(z.read_all("code/__torch__.py", 100) == "def f(): pass\n");
  CHECK(z.find("m/version") == nullptr);
  char b[2];
  z.read_range("data.pkl", 1, 2, b);
  CHECK(std::string(b, 2) == "KL");
  CHECK_THAT(error_text([&] { z.read_range("data.pkl", 2, 2, b); }), Catch::Contains("lie past its end"));
  CHECK_THAT(error_text([&] { (void)z.read_all("absent", 100); }), Catch::Contains("has no record m/absent"));
  CHECK_THAT(error_text([&] { (void)z.read_all("code/__torch__.py", 10); }),
             Catch::Contains("holds 14 bytes, more than the 10"));
  // The in-memory twin reads the same bytes the same way.
  ZipReader m("m.pt", zip_bytes({{"m/data.pkl", "PKL"}}), kTorchScriptZip);
  CHECK(m.read_all("data.pkl", 3) == "PKL");
}

TEST_CASE("zip reader: files that are not zips, or lie, are refused naming the file", "[zip_reader]") {
  TempDir d;
  CHECK_THAT(refusal(write(d, "empty.pt", "")), Catch::Contains("empty.pt") && Catch::Contains("too short"));
  CHECK_THAT(refusal(write(d, "text.pt", std::string(100, 'x'))), Catch::Contains("no end-of-central-directory record"));
  std::string cut = zip_bytes({{"m/data.pkl", std::string(1000, 'p')}});
  CHECK_THAT(refusal(write(d, "cut.pt", cut.substr(0, 500) + cut.substr(cut.size() - 22))),
             Catch::Contains("cut.pt") && Catch::Contains("outside the file"));
  Rec lies{"m/data.pkl", "abc", 0, 1 << 30, 1 << 30};
  CHECK_THAT(refusal(write(d, "lies.pt", zip_bytes({lies}))),
             Catch::Contains("lies.pt") && Catch::Contains("does not lie before the central directory"));
  CHECK_THAT(refusal(write(d, "sizes.pt", zip_bytes({{"m/data.pkl", "abc", 0, 4}}))),
             Catch::Contains("stored but its sizes differ (3 and 4)"));
  CHECK_THAT(refusal(write(d, "twice.pt", zip_bytes({{"m/a", "1"}, {"m/a", "2"}}))), Catch::Contains("m/a appears twice"));
  CHECK_THAT(refusal(write(d, "out.pt", zip_bytes({{"m/a", "1"}, {"n/b", "2"}}))),
             Catch::Contains("n/b is outside the archive's folder m/"));
  // Through open_untrusted: the type of what is at the path, and no blocking on a FIFO.
  CHECK_THAT(refusal(d.str()), Catch::Contains("is a folder, not a regular file"));
  const std::string fifo = d.str() + "/fifo.pt";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(refusal(fifo), Catch::Contains("fifo.pt: the TorchScript model is a FIFO (named pipe), not a regular file"));
  CHECK_THAT(refusal(d.str() + "/missing.pt"), Catch::Contains("missing.pt") && Catch::Contains("does not exist"));
}

TEST_CASE("zip reader: a record whose bytes do not match its CRC-32 is refused", "[zip_reader]") {
  std::string z = zip_bytes({{"m/data.pkl", "PKL"}});
  z[30 + 10] = 'Q';  // the first data byte, after the 30-byte local header and the name
  ZipReader r("crc.pt", z);
  CHECK_THAT(error_text([&] { (void)r.read_all("data.pkl", 10); }), Catch::Contains("crc.pt") && Catch::Contains("fails its CRC-32"));
}

TEST_CASE("zip reader: deflated records inflate to their declared size, never more, never raw", "[zip_reader]") {
  const std::string text(5000, 'a');
  const Rec good = deflated("m/code/x.py", text);
  ZipReader ok("ok.pt", zip_bytes({good}), kTorchScriptZip);
  CHECK(ok.read_all("code/x.py", 5000) == text);
  // Above the caller's cap: refused before anything is inflated.
  CHECK_THAT(error_text([&] { (void)ok.read_all("code/x.py", 4999); }),
             Catch::Contains("ok.pt") && Catch::Contains("record code/x.py is compressed (deflate, method 8)") &&
                 Catch::Contains("declares 5000 bytes inflated, more than the 4999"));
  // Never read in place: a range of a deflated record is not where the directory points.
  char b[1];
  CHECK_THAT(error_text([&] { ok.read_range("code/x.py", 0, 1, b); }), Catch::Contains("is compressed (deflate, method 8)"));
  // A bomb: the stream holds more than the directory declares; inflation stops at the bound.
  Rec bomb = good;
  bomb.declared_size = 100;
  ZipReader zb("bomb.pt", zip_bytes({bomb}), kTorchScriptZip);
  CHECK_THAT(error_text([&] { (void)zb.read_all("code/x.py", 1 << 20); }),
             Catch::Contains("bomb.pt") && Catch::Contains("code/x.py") &&
                 Catch::Contains("inflates to more than the 100 bytes its directory declares"));
  Rec less = good;
  less.declared_size = 6000;
  ZipReader zl("less.pt", zip_bytes({less}), kTorchScriptZip);
  CHECK_THAT(error_text([&] { (void)zl.read_all("code/x.py", 1 << 20); }),
             Catch::Contains("inflates to 5000 bytes, not the 6000 its directory declares"));
  Rec cut = good;
  cut.data.resize(cut.data.size() / 2);
  ZipReader zc("cut.pt", zip_bytes({cut}), kTorchScriptZip);
  CHECK_THAT(error_text([&] { (void)zc.read_all("code/x.py", 1 << 20); }), Catch::Contains("truncated"));
  ZipReader zg("garbage.pt", zip_bytes({{"m/code/x.py", std::string(64, '\xff'), 8, 100}}), kTorchScriptZip);
  CHECK_THAT(error_text([&] { (void)zg.read_all("code/x.py", 1 << 20); }), Catch::Contains("not a valid deflate stream"));
  // An unknown method is named.
  ZipReader bz("bz.pt", zip_bytes({{"m/code/x.py", "xyz", 12}}), kTorchScriptZip);
  CHECK_THAT(error_text([&] { (void)bz.read_all("code/x.py", 100); }), Catch::Contains("bzip2, method 12"));
}

TEST_CASE("zip reader: an entry count beyond the directory's room is refused before any allocation", "[zip_reader]") {
  std::string z = zip_bytes({{"a", "1"}});
  // Patch the end record's two counts to 65000 with the directory size unchanged.
  const size_t eocd = z.size() - 22;
  z[eocd + 8] = z[eocd + 10] = static_cast<char>(0xE8);
  z[eocd + 9] = z[eocd + 11] = static_cast<char>(0xFD);
  CHECK_THAT(error_text([&] { ZipReader r("many.pt", z); }),
             Catch::Contains("65000 entries cannot fit in a central directory of 47 bytes"));
}

TEST_CASE("zip reader: a zip64 archive of many entries is indexed across its directory window", "[zip_reader]") {
  // 20,000 entries of 46 + 8..12 name bytes: ~1.1 MB of directory, read through the reader's
  // 256 KiB window, so entries straddle the window's edges; names are found by binary search.
  const std::string bytes = mtrain::testing::directory_heavy_zip({{"m/data.pkl", "PKL"}, {"m/last", "L"}}, 20'000, "m/x/");
  ZipReader z("many.pt", bytes, kTorchScriptZip);
  REQUIRE(z.records().size() == 20'002);
  CHECK(z.prefix() == "m/");
  for (const std::string n : {"x/0", "x/9999", "x/19999", "data.pkl", "last"}) {
    const ZipRecord* r = z.find(n);
    REQUIRE(r != nullptr);
    CHECK(z.name(*r) == n);
  }
  CHECK(z.find("x/20000") == nullptr);
  CHECK(z.find("x/") == nullptr);
  CHECK(z.read_all("data.pkl", 3) == "PKL");
  CHECK(z.read_all("x/12345", 0).empty());  // an empty record
  // A duplicate among them is still found (the sorted index's neighbours).
  std::string dup = mtrain::testing::directory_heavy_zip({{"m/x/777", "D"}, {"m/last", "L"}}, 1'000, "m/x/");
  CHECK_THAT(error_text([&] { ZipReader("dup.pt", dup, kTorchScriptZip); }), Catch::Contains("m/x/777 appears twice"));
}

namespace {

// One deflated record `data` of `name`, then `aliases` more central-directory entries, each named
// `<alias_prefix><i>`, pointing at the same local header and data.
std::string shared_record_zip(const Rec& data, int aliases, const std::string& alias_prefix) {
  std::string out;
  mtrain::testing::append_zip_header(out, false, data.name, data.method, static_cast<uint64_t>(data.crc),
                                     data.data.size(), static_cast<uint64_t>(data.declared_size), 0);
  out += data.data;
  const uint64_t dir = out.size();
  mtrain::testing::append_zip_header(out, true, data.name, data.method, static_cast<uint64_t>(data.crc),
                                     data.data.size(), static_cast<uint64_t>(data.declared_size), 0);
  for (int i = 0; i < aliases; ++i)
    mtrain::testing::append_zip_header(out, true, alias_prefix + std::to_string(i), data.method,
                                       static_cast<uint64_t>(data.crc), data.data.size(),
                                       static_cast<uint64_t>(data.declared_size), 0);
  mtrain::testing::append_end_records(out, dir, static_cast<uint64_t>(aliases) + 1, false);
  return out;
}

}  // namespace

// Issue 40 item 7: 2,000 directory entries pointing at one deflate record that inflates to the
// 64 MiB a code record may hold kept the launcher busy past 120 s; refused when indexed, at once.
TEST_CASE("zip reader: entries that share one record are refused before anything is inflated", "[zip_reader]") {
  const Rec big = deflated("m/code/__torch__.py", std::string(64u << 20, '#'));
  const std::string bytes = shared_record_zip(big, 2'000, "m/code/x");
  CHECK(bytes.size() < (300u << 10));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string why = error_text([&] { ZipReader z("alias.pt", bytes, kTorchScriptZip); });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_THAT(why, Catch::Contains("alias.pt") && Catch::Contains("point at the same data") &&
                      Catch::Contains("every record must have bytes of its own"));
  CHECK(took < 0.25);
  // A record name with terminal escapes is shown made visible.
  const std::string esc = shared_record_zip(deflated("m/code/a.py", "x"), 1, "m/code/\x1b]0;owned\x07");
  const std::string shown = error_text([&] { ZipReader z("esc.pt", esc, kTorchScriptZip); });
  CHECK_THAT(shown, Catch::Contains("m/code/^[]0;owned^G0"));
  CHECK(shown.find('\x1b') == std::string::npos);
}

TEST_CASE("zip reader: a record whose bytes run into another record's is refused", "[zip_reader]") {
  using mtrain::testing::append_end_records;
  using mtrain::testing::append_zip_header;
  // b's directory entry starts inside a's data.
  {
    std::string out;
    const std::string a(100, 'a');
    append_zip_header(out, false, "m/a", 0, zip_crc32(0, a.data(), a.size()), a.size(), a.size(), 0);
    out += a;
    const uint64_t dir = out.size();
    append_zip_header(out, true, "m/a", 0, zip_crc32(0, a.data(), a.size()), a.size(), a.size(), 0);
    append_zip_header(out, true, "m/b", 0, zip_crc32(0, a.data(), 10), 10, 10, 50);
    append_end_records(out, dir, 2, false);
    CHECK_THAT(error_text([&] { ZipReader z("overlap.pt", out, kTorchScriptZip); }),
               Catch::Contains("records m/a and m/b overlap"));
  }
  // a's local header is longer than its directory entry says (an extra field), so its declared 25
  // bytes run into b's header: found when a is read.
  {
    std::string out;
    const std::string a(25, 'a');
    append_zip_header(out, false, "m/a", 0, zip_crc32(0, a.data(), a.size()), a.size(), a.size(), 0,
                      "XY" + std::string("\x10\x00", 2) + std::string(16, 'Z'));
    out += a.substr(0, 10);
    const uint64_t b_at = out.size();
    append_zip_header(out, false, "m/b", 0, zip_crc32(0, "b", 1), 1, 1, b_at);
    out += "b";
    const uint64_t dir = out.size();
    append_zip_header(out, true, "m/a", 0, zip_crc32(0, a.data(), a.size()), a.size(), a.size(), 0);
    append_zip_header(out, true, "m/b", 0, zip_crc32(0, "b", 1), 1, 1, b_at);
    append_end_records(out, dir, 2, false);
    ZipReader z("into.pt", out, kTorchScriptZip);
    CHECK(z.read_all("b", 1) == "b");
    CHECK_THAT(error_text([&] { (void)z.read_all("a", 100); }), Catch::Contains("run into the next record"));
  }
}

TEST_CASE("zip reader: the deflated records of one archive inflate to kMaxInflatedBytes in all", "[zip_reader]") {
  const std::string text(64u << 20, '\0');
  const Rec one = deflated("m/code/0.py", text);
  std::vector<Rec> recs;
  const int n = static_cast<int>(kMaxInflatedBytes / text.size()) + 1;
  for (int i = 0; i < n; ++i) {
    Rec r = one;
    r.name = "m/code/" + std::to_string(i) + ".py";
    recs.push_back(r);
  }
  ZipReader z("many.pt", zip_bytes(recs), kTorchScriptZip);
  for (int i = 0; i + 1 < n; ++i) CHECK(z.read_all("code/" + std::to_string(i) + ".py", text.size()).size() == text.size());
  CHECK_THAT(error_text([&] { (void)z.read_all("code/" + std::to_string(n - 1) + ".py", text.size()); }),
             Catch::Contains("inflate to more than 268435456 bytes in all"));
}
